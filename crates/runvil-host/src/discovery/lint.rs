//! What the config says that runvil will not honour the way other clients do: the warnings
//! `runvil check` shows, and `tools`, `call` and `serve` say before they start. They never refuse anything (the Pack decides what it accepts, and
//! `check` shows its verdicts); they explain the files people copy from elsewhere.
//!
//! Each warning names the server and the key, never a value: a URL or header value can hold
//! a token (some services put one in the URL's path). The `${...}` placeholders are shown,
//! being names, except a shell default (`${NAME:-default}`), which may be a token itself and
//! is shown as `...`. For an `mcp-remote` entry the URL is not echoed either, for the same
//! reason: the advice says where to take it from.
//!
//! Entries with `command` get only the `mcp-remote` warning: the Pack refuses them whole, so
//! advice about their other keys would be about keys nothing reads. Entries turned off
//! (`"disabled": true`) get none: runvil leaves them out whole.

use serde_json::{Map, Value};

use super::jsonc::Step;

/// VS Code's (and Cursor's) own variables that could appear in an entry: they are not
/// environment variables, so `${env:...}` is not the advice for them.
const EDITOR_VARIABLES: &[&str] = &[
    "workspaceFolder",
    "workspaceFolderBasename",
    "workspaceRoot",
    "cwd",
    "file",
    "fileDirname",
    "relativeFile",
    "pathSeparator",
    "execPath",
];

/// Keys other clients read as the server's address.
const OTHER_URL_KEYS: &[&str] = &["serverUrl", "httpUrl"];

/// The warnings about a config file whose servers are at `servers_key` of `root`, given the
/// keys its objects hold more than once: file-wide ones first, then each server's, by name.
pub(crate) fn warnings(
    root: &Map<String, Value>,
    servers_key: Option<&str>,
    duplicates: &[Vec<Step>],
) -> Vec<String> {
    let mut warnings = Vec::new();
    if servers_key == Some("mcpServers") && root.contains_key("servers") {
        warnings.push(
            "the file has both mcpServers and servers; runvil reads mcpServers only".to_owned(),
        );
    }
    for path in duplicates {
        warnings.push(duplicate(path, servers_key));
    }
    let Some(Value::Object(servers)) = servers_key.and_then(|key| root.get(key)) else {
        return warnings;
    };
    let mut names: Vec<&String> = servers.keys().collect();
    names.sort();
    for name in names {
        if let Some(Value::Object(entry)) = servers.get(name) {
            let server = format!("server \"{}\"", name.escape_debug());
            let advice = of_entry(entry);
            warnings.extend(advice.into_iter().map(|a| format!("{server}: {a}")));
        }
    }
    warnings
}

/// A key written twice, said of its server when it is in one.
fn duplicate(path: &[Step], servers_key: Option<&str>) -> String {
    const LAST: &str = "is written more than once; runvil uses the last one";
    match path {
        [Step::Key(top), Step::Key(name), rest @ ..] if Some(top.as_str()) == servers_key => {
            let server = format!("server \"{}\"", name.escape_debug());
            if rest.is_empty() {
                format!("{server} {LAST}")
            } else {
                format!("{server}: {} {LAST}", dotted(rest))
            }
        }
        _ => format!("{} {LAST}", dotted(path)),
    }
}

/// A path as the Pack's refusals write keys: `headers.Authorization`, `args[1]`.
fn dotted(path: &[Step]) -> String {
    let mut text = String::new();
    for step in path {
        match step {
            Step::Key(key) => {
                if !text.is_empty() {
                    text.push('.');
                }
                text.extend(key.escape_debug());
            }
            Step::Index(index) => text.push_str(&format!("[{index}]")),
        }
    }
    text
}

/// One entry's warnings, without the server's name.
fn of_entry(entry: &Map<String, Value>) -> Vec<String> {
    // Turned off, it is left out whole: nothing reads its other keys.
    if entry.get(super::DISABLED) == Some(&Value::Bool(true)) {
        return Vec::new();
    }
    if entry.contains_key("command") {
        return runs_mcp_remote(entry).into_iter().collect();
    }
    let mut advice = Vec::new();
    for key in OTHER_URL_KEYS.iter().filter(|k| entry.contains_key(**k)) {
        advice.push(format!("{key} is ignored; runvil reads url"));
    }
    let mut strings = Vec::new();
    collect_strings(entry, &mut Vec::new(), &mut strings);
    for (path, text) in strings {
        let key = dotted(&path);
        advice.extend(unexpanded(text).into_iter().map(|inner| held(&key, inner)));
    }
    advice
}

/// The advice for an entry that runs `mcp-remote`, the local bridge other clients start to
/// reach a remote server; runvil reaches it itself.
fn runs_mcp_remote(entry: &Map<String, Value>) -> Option<String> {
    let command = entry.get("command").and_then(Value::as_str);
    let args: Vec<&str> = entry
        .get("args")
        .and_then(Value::as_array)
        .map(|args| args.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    // `npx -y mcp-remote@latest URL`, `mcp-remote URL`, a path to it, or through `cmd /c`.
    let is_bridge = |word: &&str| {
        let name = word.rsplit(['/', '\\']).next().unwrap_or_default();
        name == "mcp-remote" || name.starts_with("mcp-remote@")
    };
    if !command.iter().chain(&args).any(is_bridge) {
        return None;
    }
    let headers = if args.contains(&"--header") {
        ", with each --header as an entry of \"headers\""
    } else {
        ""
    };
    Some(format!(
        "runs mcp-remote, a local bridge that runvil does not start; runvil reaches the server \
         itself: write {{\"url\": \"<the URL after mcp-remote>\"}}{headers}"
    ))
}

/// Every string of `object` with its path, keys in order so the warnings are.
fn collect_strings<'v>(
    object: &'v Map<String, Value>,
    path: &mut Vec<Step>,
    found: &mut Vec<(Vec<Step>, &'v str)>,
) {
    let mut keys: Vec<&String> = object.keys().collect();
    keys.sort();
    for key in keys {
        path.push(Step::Key(key.clone()));
        if let Some(value) = object.get(key) {
            collect_value(value, path, found);
        }
        path.pop();
    }
}

// Recursion is bounded: serde_json refused anything nested deeper than 128 levels.
fn collect_value<'v>(
    value: &'v Value,
    path: &mut Vec<Step>,
    found: &mut Vec<(Vec<Step>, &'v str)>,
) {
    match value {
        Value::String(text) => found.push((path.clone(), text)),
        Value::Object(object) => collect_strings(object, path, found),
        Value::Array(items) => {
            for (index, item) in items.iter().enumerate() {
                path.push(Step::Index(index));
                collect_value(item, path, found);
                path.pop();
            }
        }
        _ => {}
    }
}

/// The insides of the `${...}` that the Pack leaves as written, read as its `expand` reads
/// them: a `${` up to the first `}`, where only `env:NAME` (a name not empty) and `userHome`
/// are replaced.
fn unexpanded(text: &str) -> Vec<&str> {
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            break;
        };
        let inner = &after[..end];
        let env = inner
            .strip_prefix("env:")
            .is_some_and(|name| !name.is_empty());
        if !env && inner != "userHome" {
            found.push(inner);
        }
        rest = &after[end + 1..];
    }
    found
}

/// What to write instead of `${inner}` at `key`.
fn held(key: &str, inner: &str) -> String {
    let say = |shown: &str, then: &str| {
        format!("{key} holds ${{{shown}}}, which runvil passes as written{then}")
    };
    if EDITOR_VARIABLES.contains(&inner) {
        return say(inner, "; write the value itself");
    }
    if is_name(inner) {
        return say(inner, &format!("; write ${{env:{inner}}}"));
    }
    if let Some((name, _default)) = inner.split_once(":-").filter(|(name, _)| is_name(name)) {
        let then = format!("; write ${{env:{name}}} (runvil has no default values)");
        return say(&format!("{name}:-..."), &then);
    }
    if inner.starts_with("input:") && is_label(inner) {
        return say(
            inner,
            " (it prompts for no input); write ${env:NAME} and set the variable NAME",
        );
    }
    say(if is_label(inner) { inner } else { "..." }, "")
}

/// An environment variable's name as shells write it.
fn is_name(text: &str) -> bool {
    let mut chars = text.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && text.len() <= 64
}

/// A short name-like text (`input:token`, `env:`), safe to show; anything else is not shown.
fn is_label(text: &str) -> bool {
    !text.is_empty()
        && text.len() <= 64
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | ':' | '.' | '-'))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::discovery::{jsonc, servers_key};

    /// The warnings of a file's text.
    fn of(text: &str) -> Vec<String> {
        let parsed = jsonc::parse(text.as_bytes()).expect("JSON");
        let Value::Object(root) = parsed.value else {
            panic!("not an object");
        };
        warnings(&root, servers_key(&root), &parsed.duplicates)
    }

    fn of_servers(servers: Value) -> Vec<String> {
        of(&json!({ "mcpServers": servers }).to_string())
    }

    #[test]
    fn placeholders_other_clients_expand_are_named_with_what_to_write() {
        let warnings = of_servers(json!({"x": {
            "url": "https://h/${TENANT}/mcp?k=${env:KEY}&h=${userHome}",
            "headers": {
                "Authorization": "Bearer ${API_KEY}",
                "X-Default": "${TOKEN:-sk-live-secret}",
                "X-Input": "${input:token}",
                "X-Dir": "${workspaceFolder}",
                "X-Empty": "${env:}",
                "X-Odd": "${ not a name }",
                "X-Open": "${OPEN",
            },
            "oauth": {"clientId": "${CLIENT}"},
        }}));
        assert_eq!(
            warnings,
            [
                "server \"x\": headers.Authorization holds ${API_KEY}, which runvil passes as written; write ${env:API_KEY}",
                "server \"x\": headers.X-Default holds ${TOKEN:-...}, which runvil passes as written; write ${env:TOKEN} (runvil has no default values)",
                "server \"x\": headers.X-Dir holds ${workspaceFolder}, which runvil passes as written; write the value itself",
                "server \"x\": headers.X-Empty holds ${env:}, which runvil passes as written",
                "server \"x\": headers.X-Input holds ${input:token}, which runvil passes as written (it prompts for no input); write ${env:NAME} and set the variable NAME",
                "server \"x\": headers.X-Odd holds ${...}, which runvil passes as written",
                "server \"x\": oauth.clientId holds ${CLIENT}, which runvil passes as written; write ${env:CLIENT}",
                "server \"x\": url holds ${TENANT}, which runvil passes as written; write ${env:TENANT}",
            ]
        );
        let all = warnings.concat();
        assert!(
            !all.contains("sk-live-secret") && !all.contains("https://h"),
            "{all}"
        );
    }

    #[test]
    fn what_the_pack_expands_is_not_warned_about() {
        let servers = json!({"ok": {
            "url": "https://h/mcp",
            "headers": {"Authorization": "Bearer ${env:A}-${env:B}", "X-H": "${userHome}/x"},
            "disabled": false,
        }});
        assert_eq!(of_servers(servers), Vec::<String>::new());
    }

    #[test]
    fn other_url_keys_are_named() {
        let warnings = of_servers(json!({
            "b": {"serverUrl": "https://h/mcp"},
            "a": {"url": "https://h/mcp", "disabled": false, "httpUrl": "https://h/mcp"},
            // Turned off: left out whole, so nothing is said of its keys.
            "c": {"url": "https://h/${X}", "disabled": true, "httpUrl": "https://h/mcp"},
        }));
        assert_eq!(
            warnings,
            [
                "server \"a\": httpUrl is ignored; runvil reads url",
                "server \"b\": serverUrl is ignored; runvil reads url",
            ]
        );
    }

    #[test]
    fn mcp_remote_is_named_with_the_entry_to_write_without_its_url() {
        let warnings = of_servers(json!({
            "a": {"command": "npx", "args": ["mcp-remote", "https://user:pw@h/sse?key=k"]},
            "b": {"command": "npx", "args": ["-y", "mcp-remote@latest", "https://h/mcp",
                  "--header", "Authorization: Bearer ${AUTH}"], "env": {"AUTH": "x"}},
            "c": {"command": "node_modules/.bin/mcp-remote", "args": ["https://h/mcp"]},
            "d": {"command": "cmd", "args": ["/c", "npx", "mcp-remote", "https://h/mcp"]},
            // Refused by the Pack whole: nothing to say about its keys.
            "e": {"command": "npx", "args": ["server-${X}"], "disabled": true},
        }));
        let advice = "runs mcp-remote, a local bridge that runvil does not start; runvil reaches the server itself: write {\"url\": \"<the URL after mcp-remote>\"}";
        assert_eq!(
            warnings,
            [
                format!("server \"a\": {advice}"),
                format!("server \"b\": {advice}, with each --header as an entry of \"headers\""),
                format!("server \"c\": {advice}"),
                format!("server \"d\": {advice}"),
            ]
        );
    }

    #[test]
    fn keys_written_twice_are_named_by_server_and_key() {
        let text = r#"{
            "mcpServers": {
                "a": {"url": "https://h/1"},
                "a": {"url": "https://h/2", "headers": {"X-K": "1", "X-K": "2"}},
                "b\n": {}, "b\n": {}
            },
            "inputs": [{"id": 1, "id": 2}],
            "servers": {}
        }"#;
        assert_eq!(
            of(text),
            [
                "the file has both mcpServers and servers; runvil reads mcpServers only",
                "server \"a\": headers.X-K is written more than once; runvil uses the last one",
                "server \"a\" is written more than once; runvil uses the last one",
                "server \"b\\n\" is written more than once; runvil uses the last one",
                "inputs[0].id is written more than once; runvil uses the last one",
            ]
        );
    }

    #[test]
    fn vs_code_s_servers_are_read_where_they_are() {
        let text = r#"{"servers": {"v": {"url": "${URL}", "url": "https://h/mcp"}}}"#;
        assert_eq!(
            of(text),
            ["server \"v\": url is written more than once; runvil uses the last one"]
        );
    }
}
