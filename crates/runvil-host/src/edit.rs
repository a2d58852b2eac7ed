//! `runvil add NAME URL [--header 'Name: value']…` and `runvil remove NAME`: the config edited
//! as `claude mcp add` edits its own, one server at a time.
//!
//! Which file: `--config PATH`, else `$RUNVIL_MCP_CONFIG`, else the file the other commands
//! read (the first found in discovery's order), else, for `add`, a new `./mcp.json`. So a
//! server added without `--config` is one the next `runvil call` sees.
//!
//! The change is made in the file's text (`surgery`), so every other entry and field, their
//! order, the comments and the layout stay as written; a change that cannot be made so is
//! refused, writing nothing. The file is replaced atomically (a new file beside it, with its
//! permissions, then a rename), through a symbolic link to where it points.
//!
//! A header's value may be a token: it is written as given but never printed, and a literal
//! one (not `${env:NAME}`) gets a hint to keep it out of the file. No message shows the URL
//! either, since some services put a token in it.

mod surgery;

use std::fs;
use std::io::Write as _;
use std::os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};

use serde_json::json;

use crate::check;
use crate::discovery;
use crate::host::{EXIT_INVALID, EXIT_OK, EXIT_OTHER};
use crate::untrusted::shown;

pub(crate) use surgery::Entry;
use surgery::{Change, Refusal};

/// The file `add` creates when no config is found or named.
const NEW_CONFIG: &str = "mcp.json";

/// What marks a value that is read from the environment.
const ENV_PLACEHOLDER: &str = "${env:";

/// The permissions of a config `add` creates: readable by the user alone, since a header
/// value written into it may be a token.
const NEW_FILE_MODE: u32 = 0o600;

/// `runvil add NAME URL`.
pub(crate) fn add(
    name: &str,
    url: &str,
    headers: &[String],
    force: bool,
    config: Option<&Path>,
) -> u8 {
    let entry = match entry(name, url, headers) {
        Ok(entry) => entry,
        Err(e) => {
            eprintln!("runvil: {e}");
            return EXIT_INVALID;
        }
    };
    let path = match discovery::locate(config) {
        Ok(found) => found.path,
        Err(_) => PathBuf::from(".").join(NEW_CONFIG),
    };
    let shown_path = path.display().to_string();
    let original = match read(&path) {
        Ok(text) => text,
        Err(e) => {
            eprintln!("runvil: {e}");
            return EXIT_OTHER;
        }
    };
    let change = Change::Add {
        name,
        entry: &entry,
        replace: force,
    };
    let changed = match surgery::apply(original.as_deref().unwrap_or("{}\n"), &change) {
        Ok(changed) => changed,
        Err(Refusal::Exists) => {
            eprintln!(
                "runvil: {shown_path} already has a server \"{}\"; pass --force to replace it",
                shown(name)
            );
            return EXIT_OTHER;
        }
        Err(refusal) => {
            eprintln!("runvil: {}", refused(&shown_path, &refusal));
            return EXIT_OTHER;
        }
    };
    if let Err(e) = write(&path, &changed) {
        eprintln!("runvil: {e}");
        return EXIT_OTHER;
    }
    let name_shown = shown(name);
    let action = match original.as_deref().map(|o| has(o, name)) {
        Some(true) => format!("replaced server \"{name_shown}\" in {shown_path}"),
        Some(false) => format!("added server \"{name_shown}\" to {shown_path}"),
        None => format!("created {shown_path} with server \"{name_shown}\""),
    };
    eprintln!("runvil: {action}");
    for (header, value) in &entry.headers {
        if !value.contains(ENV_PLACEHOLDER) {
            eprintln!(
                "runvil: hint: the value of header {header} is written into {shown_path} as \
                 given, for anyone who can read the file; to keep it out, write it as \
                 ${{env:NAME}} and set the variable: {}",
                env_example(header)
            );
        }
    }
    // What the other commands will say of it, without a connection: a reserved header, an
    // unset variable.
    if let Ok(verdicts) = check::verdicts(json!({ name: entry.as_value() })) {
        for verdict in verdicts {
            if let Some(reason) = verdict.refused {
                eprintln!("runvil: note: as things stand, runvil refuses it: {reason}");
            }
        }
    }
    EXIT_OK
}

/// `runvil remove NAME`.
pub(crate) fn remove(name: &str, config: Option<&Path>) -> u8 {
    let path = match discovery::locate(config) {
        Ok(found) => found.path,
        Err(e) => {
            eprintln!("runvil: {e}");
            return EXIT_OTHER;
        }
    };
    let shown_path = path.display().to_string();
    let original = match read(&path) {
        Ok(Some(text)) => text,
        Ok(None) => {
            eprintln!("runvil: {shown_path} does not exist");
            return EXIT_OTHER;
        }
        Err(e) => {
            eprintln!("runvil: {e}");
            return EXIT_OTHER;
        }
    };
    let changed = match surgery::apply(&original, &Change::Remove { name }) {
        Ok(changed) => changed,
        Err(Refusal::Missing(names)) => {
            let names: Vec<String> = names.iter().map(|n| shown(n)).collect();
            let known = if names.is_empty() {
                "it has no servers".to_owned()
            } else {
                format!("the namespaces are: {}", names.join(", "))
            };
            eprintln!(
                "runvil: unknown namespace \"{}\" in {shown_path}; {known}",
                shown(name)
            );
            return EXIT_INVALID;
        }
        Err(refusal) => {
            eprintln!("runvil: {}", refused(&shown_path, &refusal));
            return EXIT_OTHER;
        }
    };
    if let Err(e) = write(&path, &changed) {
        eprintln!("runvil: {e}");
        return EXIT_OTHER;
    }
    eprintln!(
        "runvil: removed server \"{}\" from {shown_path}",
        shown(name)
    );
    EXIT_OK
}

/// The entry `add` writes, from its arguments; the error names the argument, never a value.
fn entry(name: &str, url: &str, headers: &[String]) -> Result<Entry, String> {
    if name.is_empty() || name.chars().any(char::is_control) {
        return Err("NAME must be a name without control characters".to_owned());
    }
    let scheme = url
        .split_once("://")
        .map(|(scheme, _)| scheme.to_ascii_lowercase());
    if !matches!(scheme.as_deref(), Some("http" | "https")) {
        return Err("URL must start with http:// or https://".to_owned());
    }
    let mut parsed: Vec<(String, String)> = Vec::new();
    for (index, header) in headers.iter().enumerate() {
        let Some((header_name, value)) = header.split_once(':') else {
            return Err(format!(
                "--header number {} is not `Name: value`",
                index + 1
            ));
        };
        let header_name = header_name.trim();
        if header_name.is_empty() || !header_name.bytes().all(is_token_byte) {
            return Err(format!(
                "--header number {} has no valid header name before its `:`",
                index + 1
            ));
        }
        if parsed
            .iter()
            .any(|(seen, _)| seen.eq_ignore_ascii_case(header_name))
        {
            return Err(format!("header {header_name} is given twice"));
        }
        parsed.push((header_name.to_owned(), value.trim().to_owned()));
    }
    Ok(Entry {
        url: url.to_owned(),
        headers: parsed,
    })
}

/// The `--header` a hint suggests for `header`: its value read from a variable named after it
/// (`X-Api-Key` reads `X_API_KEY`), after `Bearer ` for `Authorization`.
fn env_example(header: &str) -> String {
    let variable: String = header
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_uppercase()
            } else {
                '_'
            }
        })
        .collect();
    let scheme = if header.eq_ignore_ascii_case("authorization") {
        "Bearer "
    } else {
        ""
    };
    format!("--header '{header}: {scheme}${{env:{variable}}}'")
}

/// A byte of an HTTP header name (RFC 9110's `tchar`).
fn is_token_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&byte)
}

/// Whether the servers of the mcp.json text `text` have `name`.
fn has(text: &str, name: &str) -> bool {
    discovery::jsonc::parse(text.as_bytes()).is_ok_and(|parsed| {
        ["mcpServers", "servers"]
            .into_iter()
            .find_map(|key| parsed.value.get(key))
            .and_then(|servers| servers.get(name))
            .is_some()
    })
}

/// Why a change was refused, naming the file.
fn refused(path: &str, refusal: &Refusal) -> String {
    match refusal {
        Refusal::Syntax(e) => format!("{path}: {e}"),
        Refusal::NotAnObject(key) => {
            format!("{path}: {key} is not an object; fix it first (nothing was written)")
        }
        Refusal::Unsafe(why) => format!(
            "cannot change {path} without disturbing the rest of it ({why}); edit it by hand \
             (nothing was written)"
        ),
        Refusal::Exists => format!("{path} already has that server"),
        Refusal::Missing(_) => format!("{path} has no such server"),
    }
}

/// The file's text, or `None` when it does not exist.
fn read(path: &Path) -> Result<Option<String>, String> {
    let shown = path.display();
    match fs::read(path) {
        Ok(bytes) => String::from_utf8(bytes)
            .map(Some)
            .map_err(|_| format!("{shown} is not UTF-8 text")),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("cannot read {shown}: {e}")),
    }
}

/// Replaces the file at `path` (where a symbolic link points, if it is one) with `text`,
/// atomically, keeping its permissions.
fn write(path: &Path, text: &str) -> Result<(), String> {
    let shown = path.display();
    let target = fs::canonicalize(path).unwrap_or_else(|_| path.to_owned());
    let mode = fs::metadata(&target).map_or(NEW_FILE_MODE, |m| m.permissions().mode() & 0o7777);
    let mut temporary = target.clone().into_os_string();
    temporary.push(".runvil-new");
    let temporary = PathBuf::from(temporary);
    let _ = fs::remove_file(&temporary);
    let written = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(&temporary)
        .and_then(|mut file| {
            file.write_all(text.as_bytes())?;
            file.sync_all()?;
            // The mode the file was opened with passed the umask; the original's is kept.
            file.set_permissions(fs::Permissions::from_mode(mode))
        })
        .and_then(|()| fs::rename(&temporary, &target));
    if let Err(e) = written {
        let _ = fs::remove_file(&temporary);
        return Err(format!("cannot write {shown}: {e}"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hint_reads_the_value_from_a_variable_named_after_the_header() {
        assert_eq!(
            env_example("Authorization"),
            "--header 'Authorization: Bearer ${env:AUTHORIZATION}'"
        );
        assert_eq!(
            env_example("X-Api-Key"),
            "--header 'X-Api-Key: ${env:X_API_KEY}'"
        );
    }

    #[test]
    fn arguments_become_an_entry_and_errors_show_no_value() {
        let headers = [
            "Authorization: Bearer ${env:T}".to_owned(),
            "X-A:b:c".to_owned(),
        ];
        assert_eq!(
            entry("docs", "https://docs.example/mcp", &headers),
            Ok(Entry {
                url: "https://docs.example/mcp".to_owned(),
                headers: vec![
                    ("Authorization".to_owned(), "Bearer ${env:T}".to_owned()),
                    ("X-A".to_owned(), "b:c".to_owned()),
                ],
            })
        );
        // Its Debug names the headers, and shows neither the URL nor a value.
        let written = entry("d", "https://x/mcp?key=secret-0", &headers).expect("an entry");
        assert_eq!(
            format!("{written:?}"),
            r#"Entry { headers: ["Authorization", "X-A"], .. }"#
        );
        let wrong = |name: &str, url: &str, headers: &[&str]| {
            let headers: Vec<String> = headers.iter().map(|h| (*h).to_owned()).collect();
            entry(name, url, &headers).expect_err("refused")
        };
        assert_eq!(
            wrong("d", "ftp://x?key=secret-1", &[]),
            "URL must start with http:// or https://"
        );
        assert_eq!(
            wrong("d", "https://x", &["secret-2"]),
            "--header number 1 is not `Name: value`"
        );
        assert_eq!(
            wrong("d", "https://x", &["a b: secret-3"]),
            "--header number 1 has no valid header name before its `:`"
        );
        assert_eq!(
            wrong("d", "https://x", &["A: 1", "a: 2"]),
            "header a is given twice"
        );
        assert_eq!(
            wrong("a\nb", "https://x", &[]),
            "NAME must be a name without control characters"
        );
    }
}
