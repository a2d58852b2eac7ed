//! Properties of `${...}` substitution over generated strings: no input panics, the output is
//! what an independent reference expansion gives, a refusal names the first variable that is
//! not set, and no refusal shows a value.

use std::collections::HashMap;

use proptest::prelude::*;
use serde_json::json;

use super::tests::FakeEnvironment;
use super::*;

/// Variables that are set. No key, name or generated text contains a non-empty value, so a
/// value found in a refusal's text was echoed.
const SET: [(&str, &str); 4] = [
    ("A", "val-alpha-1"),
    ("B", "val-beta-22"),
    ("EMPTY", ""),
    ("UNI_é", "val-ünï-333"),
];

/// Names that are not set, one with a space and one outside ASCII.
const UNSET: [&str; 3] = ["NOPE", "MISSING_ü", "A B"];

const HOME: &str = "/home/val-home-4444";

/// The environment of [`SET`], with or without a home directory.
fn env(home: bool) -> FakeEnvironment {
    FakeEnvironment {
        vars: HashMap::from(SET),
        home: home.then_some(HOME),
    }
}

fn any_name() -> impl Strategy<Value = &'static str> {
    let names: Vec<&'static str> = SET.iter().map(|(name, _)| *name).chain(UNSET).collect();
    prop::sample::select(names)
}

/// Text with none of `$`, `{` and `}`.
fn plain_text() -> impl Strategy<Value = String> {
    "[a-z:/. é\u{1F600}]{0,6}"
}

/// A complete form: `${env:NAME}`, `${userHome}`, `${env:}` or some other `${...}`.
fn closed_form() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => any_name().prop_map(|name| format!("${{env:{name}}}")),
        1 => Just("${userHome}".to_owned()),
        1 => Just("${env:}".to_owned()),
        1 => Just("${other}".to_owned()),
        1 => Just("${}".to_owned()),
        1 => Just("${ env:A}".to_owned()),
    ]
}

/// Any fragment: the complete forms, plain text, and the pieces that make broken ones.
fn fragment() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => plain_text(),
        3 => closed_form(),
        1 => Just("${".to_owned()),
        1 => Just("}".to_owned()),
        1 => Just("$".to_owned()),
        1 => Just("{".to_owned()),
        1 => Just("${env:".to_owned()),
        1 => any_name().prop_map(str::to_owned),
        1 => Just("userHome".to_owned()),
    ]
}

fn any_raw() -> impl Strategy<Value = String> {
    prop::collection::vec(fragment(), 0..12).prop_map(|fragments| fragments.concat())
}

/// What one `${inner}` becomes; the value of a variable is also recorded in `values`.
fn substitute(
    inner: &str,
    env: &FakeEnvironment,
    values: &mut Vec<String>,
) -> Result<String, Refusal> {
    if inner == "userHome" {
        return env
            .home()
            .ok_or_else(|| Refusal::NoHome { key: "k".into() });
    }
    match inner.strip_prefix("env:") {
        Some(name) if !name.is_empty() => {
            let value = env.var(name).ok_or_else(|| Refusal::UnsetVariable {
                name: name.escape_default().to_string(),
                key: "k".into(),
            })?;
            values.push(value.clone());
            Ok(value)
        }
        _ => Ok(format!("${{{inner}}}")),
    }
}

/// The rule as a recursion over characters: the first `$` `{` that a later `}` closes is a
/// reference, the text before it is kept, and the rest after the `}` is expanded the same
/// way; with no such pair, the text is kept whole.
fn reference(
    raw: &[char],
    env: &FakeEnvironment,
    values: &mut Vec<String>,
) -> Result<String, Refusal> {
    let open = raw.windows(2).position(|pair| pair == ['$', '{']);
    let Some(open) = open else {
        return Ok(raw.iter().collect());
    };
    let Some(close) = raw[open + 2..].iter().position(|&c| c == '}') else {
        return Ok(raw.iter().collect());
    };
    let close = open + 2 + close;
    let before: String = raw[..open].iter().collect();
    let inner: String = raw[open + 2..close].iter().collect();
    let middle = substitute(&inner, env, values)?;
    let after = reference(&raw[close + 1..], env, values)?;
    Ok(before + &middle + &after)
}

fn run(raw: &str, env: &FakeEnvironment) -> (Result<String, Refusal>, Vec<String>) {
    let mut secrets = Vec::new();
    let got = expand(raw, "k", env, &mut secrets);
    let exposed = secrets.iter().map(|s| s.expose().to_owned()).collect();
    (got, exposed)
}

fn assert_no_value_in(text: &str) -> Result<(), TestCaseError> {
    for value in SET.iter().map(|(_, v)| *v).chain([HOME]) {
        prop_assert!(
            value.is_empty() || !text.contains(value),
            "{value:?} shown in {text:?}"
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Any mix of forms, broken ones included, expands as the reference does, and the
    /// expanded variables' values are kept as secrets, in order.
    #[test]
    fn expansion_matches_the_reference(raw in any_raw(), home in any::<bool>()) {
        let env = env(home);
        let chars: Vec<char> = raw.chars().collect();
        let mut values = Vec::new();
        let want = reference(&chars, &env, &mut values);
        let (got, secrets) = run(&raw, &env);
        prop_assert_eq!(&got, &want, "{:?}", raw);
        if want.is_ok() {
            prop_assert_eq!(secrets, values);
        }
    }

    /// With only plain text and complete forms, each fragment expands on its own, and the
    /// refusal is the one of the first fragment that fails.
    #[test]
    fn complete_forms_expand_fragment_by_fragment(
        fragments in prop::collection::vec(prop_oneof![plain_text(), closed_form()], 0..10),
        unterminated in prop::option::of(plain_text()),
        home in any::<bool>(),
    ) {
        let env = env(home);
        let mut values = Vec::new();
        let mut want = Ok(String::new());
        for fragment in &fragments {
            let part = match fragment.strip_prefix("${").and_then(|f| f.strip_suffix('}')) {
                Some(inner) => substitute(inner, &env, &mut values),
                None => Ok(fragment.clone()),
            };
            want = want.and_then(|text| part.map(|part| text + &part));
        }
        let mut raw = fragments.concat();
        if let Some(tail) = &unterminated {
            let tail = format!("${{{tail}");
            raw.push_str(&tail);
            want = want.map(|text| text + &tail);
        }
        let first_failure = fragments.iter().find_map(|fragment| {
            let inner = fragment.strip_prefix("${")?.strip_suffix('}')?;
            substitute(inner, &env, &mut Vec::new()).err()
        });
        prop_assert_eq!(want.as_ref().err(), first_failure.as_ref());
        prop_assert_eq!(run(&raw, &env).0, want, "{:?}", raw);
    }

    /// Whatever an entry holds, parsing does not panic, and neither a refusal nor the Debug
    /// of an accepted entry shows a value.
    #[test]
    fn parsing_never_shows_a_value(
        url in any_raw(),
        header in any_raw(),
        prefixed in any::<bool>(),
        home in any::<bool>(),
    ) {
        let url = if prefixed { format!("http://h/{url}") } else { url };
        let config = json!({
            "s": {"url": url, "headers": {"X-K": header}},
            "t": {"url": header},
        });
        let entries = parse(&config, &env(home)).expect("an object");
        for (_, entry) in entries {
            match entry {
                Entry::Refused(refusal) => {
                    assert_no_value_in(&refusal.to_string())?;
                    assert_no_value_in(&format!("{refusal:?}"))?;
                }
                Entry::Remote(spec) => assert_no_value_in(&format!("{spec:?}"))?,
            }
        }
    }
}
