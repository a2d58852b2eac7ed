//! What each identity may use (`--policy FILE`): rules that match an identity and allow
//! namespaces and tools. Without a file everything is allowed; with one, whatever no rule
//! allows is denied. Auditors read the rules in the file and this module's refusals in the
//! log, one place for each.
//!
//! ```json
//! {"rules": [
//!   {"match": {"sub": "alice@example.com"}, "allow": ["github/*", "docs/search"]},
//!   {"match": {"claim": "groups", "value": "eng"}, "allow": ["*"]},
//!   {"match": {"scope": "mcp:admin"}, "allow": ["*"]},
//!   {"match": {"key": "ci"}, "allow": ["build/run_tests"]}
//! ]}
//! ```
//!
//! A `match` has exactly one of: `sub` (the token's subject), `claim` with `value` (a string
//! claim equal to the value, or an array claim holding it), `scope` (one of the token's
//! scopes, its `scope` claim split on spaces) or `key` (an API key's name). An `allow` item is
//! `*` (every tool), `NS/*` (every tool of the namespace NS) or `NS/TOOL`; a namespace may hold
//! `/` (a tool name cannot), so the last `/` separates them. No rule matches the anonymous
//! identity of a loopback gateway without authentication, so with a policy it may use nothing.
//!
//! The file is checked whole at start: an unknown field, or a rule that is not one of these
//! forms, refuses it, naming the rule's place (`rules[2].match`), never a value in it.

use std::path::Path;

use serde_json::{Map, Value};

use super::api_keys::{is_key_name, name_rule};
use super::identity::Identity;
use super::{GatewayError, read_settings_file};
use crate::untrusted::shown;

/// The most characters of a client's namespace or tool name a refusal's log line quotes: the
/// names a client sends are its own, of any length.
pub(crate) const MAX_LOGGED_NAME_CHARS: usize = 128;

/// What each identity may use.
pub(crate) struct Policy {
    /// `None`: no file, everything allowed.
    rules: Option<Vec<Rule>>,
}

struct Rule {
    condition: Condition,
    allow: Vec<Pattern>,
}

/// Whom a rule is for.
enum Condition {
    Sub(String),
    Claim { name: String, value: String },
    Scope(String),
    Key(String),
}

/// What a rule allows.
#[derive(Debug, PartialEq)]
enum Pattern {
    /// `*`
    All,
    /// `NS/*`
    Namespace(String),
    /// `NS/TOOL`
    Tool(String, String),
}

impl Policy {
    /// No file: everything is allowed.
    pub(crate) fn allow_all() -> Self {
        Self { rules: None }
    }

    /// Reads and checks the file; an unknown field or malformed rule refuses it naming the
    /// rule's index.
    pub(crate) fn load(path: &Path) -> Result<Self, GatewayError> {
        let text = read_settings_file(path)?;
        let rules = parse(&text).map_err(|problem| GatewayError::file(path, problem))?;
        Ok(Self { rules: Some(rules) })
    }

    /// Whether `identity` may see and call `tool` of `namespace`.
    pub(crate) fn allows(&self, identity: &Identity, namespace: &str, tool: &str) -> bool {
        self.allowing(identity, |pattern| pattern.covers(namespace, tool))
    }

    /// Whether `identity` may see any tool of `namespace` (for the every-server listing).
    pub(crate) fn allows_namespace(&self, identity: &Identity, namespace: &str) -> bool {
        self.allowing(identity, |pattern| pattern.reaches(namespace))
    }

    /// [`Policy::allows`] for a call, which, when refused, is logged here with its reason (the
    /// identity's label, the namespace and the tool, never the arguments).
    pub(crate) fn allows_call(&self, identity: &Identity, namespace: &str, tool: &str) -> bool {
        if self.allows(identity, namespace, tool) {
            return true;
        }
        let reason = self.reason(identity, "the tool");
        tracing::warn!(
            identity = %quoted(&identity.label()),
            namespace = %quoted(namespace),
            tool = %quoted(tool),
            reason = reason.as_str(),
            "the policy refuses a call"
        );
        false
    }

    /// [`Policy::allows_namespace`] for the listing of one namespace, which, when refused, is
    /// logged here with its reason, as a call is.
    pub(crate) fn allows_listing(&self, identity: &Identity, namespace: &str) -> bool {
        if self.allows_namespace(identity, namespace) {
            return true;
        }
        let reason = self.reason(identity, "any tool of the namespace");
        tracing::warn!(
            identity = %quoted(&identity.label()),
            namespace = %quoted(namespace),
            reason = reason.as_str(),
            "the policy refuses a listing"
        );
        false
    }

    /// Why `identity` may not use `what`: no rule is for it, or those that are allow other
    /// things.
    fn reason(&self, identity: &Identity, what: &str) -> String {
        let matched = self
            .rules
            .iter()
            .flatten()
            .any(|rule| rule.condition.matches(identity));
        if matched {
            format!("the rules that match the identity do not allow {what}")
        } else {
            "no rule matches the identity".to_owned()
        }
    }

    fn allowing(&self, identity: &Identity, allowed: impl Fn(&Pattern) -> bool) -> bool {
        let Some(rules) = &self.rules else {
            return true;
        };
        rules
            .iter()
            .filter(|rule| rule.condition.matches(identity))
            .any(|rule| rule.allow.iter().any(&allowed))
    }
}

/// A name a client sent, as a log line quotes it: escaped, and cut at
/// [`MAX_LOGGED_NAME_CHARS`].
fn quoted(name: &str) -> String {
    match name.char_indices().nth(MAX_LOGGED_NAME_CHARS) {
        None => shown(name),
        Some((end, _)) => format!(
            "{}… ({} more characters)",
            shown(&name[..end]),
            name[end..].chars().count()
        ),
    }
}

impl Condition {
    fn matches(&self, identity: &Identity) -> bool {
        match (self, identity) {
            (Self::Sub(want), Identity::Subject { sub, .. }) => sub == want,
            (Self::Claim { name, value }, Identity::Subject { claims, .. }) => {
                match claims.get(name) {
                    Some(Value::String(s)) => s == value,
                    Some(Value::Array(items)) => items.iter().any(|item| item == value.as_str()),
                    _ => false,
                }
            }
            (Self::Scope(want), Identity::Subject { claims, .. }) => claims
                .get("scope")
                .and_then(Value::as_str)
                .is_some_and(|scopes| scopes.split(' ').any(|scope| scope == want)),
            (Self::Key(want), Identity::Key { name }) => name == want,
            _ => false,
        }
    }
}

impl Pattern {
    fn covers(&self, namespace: &str, tool: &str) -> bool {
        match self {
            Self::All => true,
            Self::Namespace(ns) => ns == namespace,
            Self::Tool(ns, name) => ns == namespace && name == tool,
        }
    }

    fn reaches(&self, namespace: &str) -> bool {
        match self {
            Self::All => true,
            Self::Namespace(ns) | Self::Tool(ns, _) => ns == namespace,
        }
    }
}

fn parse(text: &str) -> Result<Vec<Rule>, String> {
    let value: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    let Value::Object(top) = value else {
        return Err("not a JSON object with `rules`".into());
    };
    only_fields(&top, &["rules"], "the file")?;
    let Some(rules) = top.get("rules") else {
        return Err("`rules` is missing".into());
    };
    let Value::Array(rules) = rules else {
        return Err("`rules` is not an array".into());
    };
    rules
        .iter()
        .enumerate()
        .map(|(index, rule)| parse_rule(rule, &format!("rules[{index}]")))
        .collect()
}

fn parse_rule(rule: &Value, at: &str) -> Result<Rule, String> {
    let Value::Object(rule) = rule else {
        return Err(format!("{at} is not an object with `match` and `allow`"));
    };
    only_fields(rule, &["match", "allow"], at)?;
    let condition = match rule.get("match") {
        Some(Value::Object(condition)) => parse_condition(condition, &format!("{at}.match"))?,
        Some(_) => return Err(format!("{at}.match is not an object")),
        None => return Err(format!("{at}.match is missing")),
    };
    let allow = match rule.get("allow") {
        Some(Value::Array(items)) if !items.is_empty() => items
            .iter()
            .enumerate()
            .map(|(index, item)| parse_pattern(item, &format!("{at}.allow[{index}]")))
            .collect::<Result<_, _>>()?,
        Some(Value::Array(_)) => return Err(format!("{at}.allow is empty")),
        Some(_) => return Err(format!("{at}.allow is not an array")),
        None => return Err(format!("{at}.allow is missing")),
    };
    Ok(Rule { condition, allow })
}

const CONDITION_FORMS: &str = "`sub`, `claim` with `value`, `scope` or `key`";

fn parse_condition(condition: &Map<String, Value>, at: &str) -> Result<Condition, String> {
    only_fields(condition, &["sub", "claim", "value", "scope", "key"], at)?;
    let text = |field: &str| -> Result<Option<String>, String> {
        match condition.get(field) {
            None => Ok(None),
            Some(Value::String(s)) if !s.is_empty() => Ok(Some(s.clone())),
            Some(_) => Err(format!("{at}.{field} is not a non-empty string")),
        }
    };
    let forms = [
        text("sub")?.map(Condition::Sub),
        match (text("claim")?, text("value")?) {
            (Some(name), Some(value)) => Some(Condition::Claim { name, value }),
            (None, None) => None,
            (Some(_), None) => return Err(format!("{at} has `claim` without `value`")),
            (None, Some(_)) => return Err(format!("{at} has `value` without `claim`")),
        },
        text("scope")?.map(Condition::Scope),
        text("key")?.map(Condition::Key),
    ];
    let mut given = forms.into_iter().flatten();
    let (Some(condition), None) = (given.next(), given.next()) else {
        return Err(format!("{at} must have exactly one of {CONDITION_FORMS}"));
    };
    if let Condition::Key(name) = &condition
        && !is_key_name(name)
    {
        return Err(format!("{at}.key: {}", name_rule()));
    }
    if let Condition::Scope(scope) = &condition
        && scope.contains(' ')
    {
        return Err(format!("{at}.scope is one scope, without spaces"));
    }
    Ok(condition)
}

fn parse_pattern(item: &Value, at: &str) -> Result<Pattern, String> {
    let Value::String(item) = item else {
        return Err(format!("{at} is not a string"));
    };
    let malformed = || format!("{at} is not `*`, `NAMESPACE/*` or `NAMESPACE/TOOL`");
    if item == "*" {
        return Ok(Pattern::All);
    }
    let (namespace, tool) = item.rsplit_once('/').ok_or_else(malformed)?;
    if namespace.is_empty() || namespace.contains('*') || tool.is_empty() {
        return Err(malformed());
    }
    match tool {
        "*" => Ok(Pattern::Namespace(namespace.to_owned())),
        tool if tool.contains('*') => Err(malformed()),
        tool => Ok(Pattern::Tool(namespace.to_owned(), tool.to_owned())),
    }
}

/// Refuses a field of `object` other than `known`, naming it.
fn only_fields(object: &Map<String, Value>, known: &[&str], at: &str) -> Result<(), String> {
    match object.keys().find(|key| !known.contains(&key.as_str())) {
        None => Ok(()),
        Some(unknown) => {
            let known: Vec<String> = known.iter().map(|k| format!("`{k}`")).collect();
            Err(format!(
                "{at} has an unknown field `{}` (known: {})",
                shown(unknown),
                known.join(", ")
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn subject(claims: Value) -> Identity {
        let claims = claims.as_object().expect("claims").clone();
        let sub = claims["sub"].as_str().expect("sub").to_owned();
        Identity::Subject { sub, claims }
    }

    fn policy(file: Value) -> Policy {
        Policy {
            rules: Some(parse(&file.to_string()).expect("a good policy")),
        }
    }

    /// The issue's example, and the scope form.
    fn example() -> Policy {
        policy(json!({"rules": [
            {"match": {"sub": "alice@example.com"}, "allow": ["github/*", "docs/search"]},
            {"match": {"claim": "groups", "value": "eng"}, "allow": ["*"]},
            {"match": {"scope": "mcp:build"}, "allow": ["build/status"]},
            {"match": {"key": "ci"}, "allow": ["build/run_tests", "team/a/b/tool"]}
        ]}))
    }

    #[test]
    fn each_identity_may_use_what_its_rules_allow_and_nothing_else() {
        let policy = example();
        let alice = subject(json!({"sub": "alice@example.com", "groups": ["sales"]}));
        assert!(policy.allows(&alice, "github", "create_issue"));
        assert!(policy.allows(&alice, "docs", "search"));
        assert!(!policy.allows(&alice, "docs", "delete"));
        assert!(!policy.allows(&alice, "build", "run_tests"));
        assert!(!policy.allows(&alice, "githubx", "create_issue"));
        assert!(policy.allows_namespace(&alice, "github"));
        assert!(policy.allows_namespace(&alice, "docs"));
        assert!(!policy.allows_namespace(&alice, "build"));

        // A claim: an array holding the value, or a string equal to it.
        for groups in [json!(["sales", "eng"]), json!("eng")] {
            let bob = subject(json!({"sub": "bob", "groups": groups}));
            assert!(policy.allows(&bob, "anything", "at_all"), "{groups}");
            assert!(policy.allows_namespace(&bob, "anything"));
        }
        for groups in [
            json!("engineering"),
            json!(["Eng"]),
            json!({"eng": true}),
            json!(1),
        ] {
            let carol = subject(json!({"sub": "carol", "groups": groups}));
            assert!(!policy.allows(&carol, "docs", "search"), "{groups}");
        }

        // A scope: one of the space-separated scopes, whole.
        let scoped = subject(json!({"sub": "dave", "scope": "mcp:read mcp:build"}));
        assert!(policy.allows(&scoped, "build", "status"));
        assert!(!policy.allows(&scoped, "build", "run_tests"));
        let near = subject(json!({"sub": "dave", "scope": "mcp:builder mcp"}));
        assert!(!policy.allows(&near, "build", "status"));

        // A key, by its name only; a subject named like it is another identity.
        let ci = Identity::Key { name: "ci".into() };
        assert!(policy.allows(&ci, "build", "run_tests"));
        assert!(
            policy.allows(&ci, "team/a/b", "tool"),
            "the last / separates"
        );
        assert!(!policy.allows(&ci, "team/a", "b/tool"));
        assert!(!policy.allows(&ci, "docs", "search"));
        assert!(!policy.allows(&subject(json!({"sub": "ci"})), "build", "run_tests"));
        assert!(!policy.allows(
            &Identity::Key {
                name: "alice@example.com".into()
            },
            "docs",
            "search"
        ));

        // Nobody in particular matches no rule.
        assert!(!policy.allows(&Identity::Anonymous, "docs", "search"));
        assert!(!policy.allows_namespace(&Identity::Anonymous, "docs"));

        // Without a file, everything.
        let open = Policy::allow_all();
        assert!(open.allows(&Identity::Anonymous, "docs", "search"));
        assert!(open.allows_namespace(&ci, "x"));
    }

    #[test]
    fn a_malformed_rule_refuses_the_file_naming_its_place_and_never_a_value() {
        let good = json!({"match": {"sub": "a"}, "allow": ["*"]});
        for (file, want) in [
            (json!([]), "not a JSON object with `rules`"),
            (json!({}), "`rules` is missing"),
            (json!({"rules": {}}), "`rules` is not an array"),
            (
                json!({"rules": [], "default": "allow"}),
                "the file has an unknown field `default` (known: `rules`)",
            ),
            (
                json!({"rules": [good, "secret-x"]}),
                "rules[1] is not an object with `match` and `allow`",
            ),
            (
                json!({"rules": [good, {"match": {"sub": "a"}, "allow": ["*"], "deny": ["x/y"]}]}),
                "rules[1] has an unknown field `deny` (known: `match`, `allow`)",
            ),
            (
                json!({"rules": [{"allow": ["*"]}]}),
                "rules[0].match is missing",
            ),
            (
                json!({"rules": [{"match": [], "allow": ["*"]}]}),
                "rules[0].match is not an object",
            ),
            (
                json!({"rules": [{"match": {"sub": "a", "email": "secret-x"}, "allow": ["*"]}]}),
                "rules[0].match has an unknown field `email` (known: `sub`, `claim`, `value`, `scope`, `key`)",
            ),
            (
                json!({"rules": [{"match": {}, "allow": ["*"]}]}),
                "rules[0].match must have exactly one of `sub`, `claim` with `value`, `scope` or `key`",
            ),
            (
                json!({"rules": [{"match": {"sub": "a", "key": "b"}, "allow": ["*"]}]}),
                "rules[0].match must have exactly one of `sub`, `claim` with `value`, `scope` or `key`",
            ),
            (
                json!({"rules": [{"match": {"sub": 7}, "allow": ["*"]}]}),
                "rules[0].match.sub is not a non-empty string",
            ),
            (
                json!({"rules": [{"match": {"sub": ""}, "allow": ["*"]}]}),
                "rules[0].match.sub is not a non-empty string",
            ),
            (
                json!({"rules": [{"match": {"claim": "groups"}, "allow": ["*"]}]}),
                "rules[0].match has `claim` without `value`",
            ),
            (
                json!({"rules": [{"match": {"value": "secret-x"}, "allow": ["*"]}]}),
                "rules[0].match has `value` without `claim`",
            ),
            (
                json!({"rules": [{"match": {"claim": "groups", "value": ["secret-x"]}, "allow": ["*"]}]}),
                "rules[0].match.value is not a non-empty string",
            ),
            (
                json!({"rules": [{"match": {"key": "key:secret-x"}, "allow": ["*"]}]}),
                "rules[0].match.key: the name is not 1 to 64 of A-Z a-z 0-9 . _ -",
            ),
            (
                json!({"rules": [{"match": {"scope": "a secret-x"}, "allow": ["*"]}]}),
                "rules[0].match.scope is one scope, without spaces",
            ),
            (
                json!({"rules": [{"match": {"sub": "a"}}]}),
                "rules[0].allow is missing",
            ),
            (
                json!({"rules": [{"match": {"sub": "a"}, "allow": "*"}]}),
                "rules[0].allow is not an array",
            ),
            (
                json!({"rules": [{"match": {"sub": "a"}, "allow": []}]}),
                "rules[0].allow is empty",
            ),
            (
                json!({"rules": [{"match": {"sub": "a"}, "allow": ["*", 3]}]}),
                "rules[0].allow[1] is not a string",
            ),
        ] {
            let error = parse(&file.to_string()).err().expect("refused");
            assert_eq!(error, want, "{file}");
            assert!(!error.contains("secret-x"), "{error}");
        }
        for pattern in [
            "secret-x", "/t", "ns/", "*/t", "n*/t", "ns/t*", "ns/**", "", "/",
        ] {
            let file = json!({"rules": [good, {"match": {"sub": "a"}, "allow": ["x/*", pattern]}]});
            assert_eq!(
                parse(&file.to_string()).err(),
                Some("rules[1].allow[1] is not `*`, `NAMESPACE/*` or `NAMESPACE/TOOL`".into()),
                "{pattern}"
            );
        }
        let error = parse("{\"rules\": [").err().expect("refused");
        assert!(error.starts_with("not JSON: EOF while parsing"), "{error}");
    }

    #[test]
    fn the_file_is_read_and_its_errors_name_it() {
        let dir = std::env::temp_dir().join(format!("runvil-policy-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let path = dir.join("policy.json");
        std::fs::write(
            &path,
            json!({"rules": [{"match": {"key": "ci"}, "allow": ["b/*"]}]}).to_string(),
        )
        .expect("written");
        let policy = Policy::load(&path).expect("loaded");
        assert!(policy.allows(&Identity::Key { name: "ci".into() }, "b", "t"));
        std::fs::write(
            &path,
            r#"{"rules": [{"match": {"key": "ci"}, "allow": ["b/*"], "x": 1}]}"#,
        )
        .expect("written");
        assert_eq!(
            Policy::load(&path).err().map(|e| e.to_string()),
            Some(format!(
                "{}: rules[0] has an unknown field `x` (known: `match`, `allow`)",
                path.display()
            ))
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A call the policy refuses is logged here, naming the identity, the namespace and the
    /// tool with the reason; an allowed one, and a listing's checks, are not.
    #[test]
    fn each_refused_call_is_logged_with_its_reason_and_nothing_else_is() {
        let policy = example();
        let alice = subject(json!({"sub": "alice@example.com", "groups": ["sales"]}));
        let captured = crate::gateway::CapturedLogs::start();
        assert!(policy.allows_call(&alice, "github", "create_issue"));
        assert!(!policy.allows(&alice, "build", "listed"));
        assert!(!policy.allows_call(&alice, "docs", "delete"));
        assert!(!policy.allows_call(&subject(json!({"sub": "eve"})), "docs", "search\nforged"));
        assert!(policy.allows_listing(&alice, "github"));
        assert!(!policy.allows_namespace(&alice, "build"));
        assert!(!policy.allows_listing(&alice, "build"));
        let log = captured.text();
        let lines: Vec<&str> = log.lines().collect();
        assert_eq!(lines.len(), 3, "{log}");
        assert!(
            lines[2].ends_with(
                "the policy refuses a listing identity=alice@example.com namespace=build \
                 reason=\"the rules that match the identity do not allow any tool of the \
                 namespace\""
            ),
            "{log}"
        );
        assert!(lines[0].contains("WARN"), "{log}");
        assert!(
            lines[0].ends_with(
                "the policy refuses a call identity=alice@example.com namespace=docs \
                 tool=delete reason=\"the rules that match the identity do not allow the tool\""
            ),
            "{log}"
        );
        assert!(
            lines[1].ends_with(
                "the policy refuses a call identity=eve namespace=docs tool=search\\nforged \
                 reason=\"no rule matches the identity\""
            ),
            "{log}"
        );
    }

    #[test]
    fn a_logged_name_is_escaped_and_cut_at_its_limit() {
        let at_limit = "n".repeat(MAX_LOGGED_NAME_CHARS);
        assert_eq!(quoted(&at_limit), at_limit);
        let past = format!("{at_limit}é");
        assert_eq!(quoted(&past), format!("{at_limit}… (1 more characters)"));
        assert_eq!(quoted("a\nrunvil: b"), "a\\nrunvil: b");
    }
}
