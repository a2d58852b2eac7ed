//! Which mcp.json a command reads, and the servers object in it.
//!
//! The order is `--config PATH`, `$RUNVIL_MCP_CONFIG`, then the project's files `./mcp.json`,
//! `./.cursor/mcp.json`, `./.vscode/mcp.json`, `./.mcp.json`, then the user's: runvil's own
//! `$XDG_CONFIG_HOME/runvil/mcp.json` (`~/.config/runvil/mcp.json` by default), then
//! `~/.cursor/mcp.json`. What the person said beats what the environment says beats what lies
//! around, the project's own file beats the user's, and the user's file for runvil beats the
//! one another client keeps. Within the project, the files runvil
//! read before VS Code's and Claude Code's were found keep their place (`mcp.json`, the name
//! runvil has always read and no other client claims, then Cursor's), so a project that has
//! one of them is read as it always was; VS Code's folder and Claude Code's project file come
//! after, in that order. The order is stated (here, in the README and in `--help`) so that it
//! is predictable; `runvil check` names the file it read.
//!
//! A path that was asked for (by flag or variable) is read or fails; the others are only
//! looked for. Finding is kept apart from the process (its directory, environment and home
//! are arguments) so it can be tested.
//!
//! The file is read as the other clients write it: `jsonc` parses JSON with comments, and
//! `lint` says what in it runvil will not honour as they do. The file is read whole, up to
//! [`MAX_CONFIG_BYTES`]: larger (say `--config /dev/zero`) is an error, not a wait for memory
//! to run out.

pub(crate) mod jsonc;
mod lint;

use std::ffi::OsString;
use std::io::Read as _;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::cli::Source;

/// The variable naming the config when `--config` is not given.
pub(crate) const CONFIG_VAR: &str = "RUNVIL_MCP_CONFIG";

/// The largest config file read. An mcp.json of thousands of servers is far smaller.
const MAX_CONFIG_BYTES: u64 = 4 * 1024 * 1024;

/// A config file that was read. No `Debug`: its servers' entries may hold secrets.
pub(crate) struct Config {
    /// The file, as found.
    pub(crate) path: PathBuf,
    /// How it was chosen, for `runvil check` to say.
    pub(crate) origin: &'static str,
    /// Its `mcpServers` (or VS Code's `servers`) value; null when it has neither.
    pub(crate) servers: Value,
    /// What in it runvil will not honour as other clients do; none refuses anything.
    pub(crate) warnings: Vec<String>,
}

/// Says each of a config's warnings on stderr, as every command that reads one does.
pub(crate) fn say_warnings(warnings: &[String]) {
    for warning in warnings {
        eprintln!("runvil: warning: {warning}");
    }
}

/// Finds and reads the config of this process.
pub(crate) fn load(source: &Source) -> Result<Config, String> {
    let Found { path, origin } = locate(source.config.as_deref())?;
    let (servers, warnings) = read(&path)?;
    Ok(Config {
        path,
        origin,
        servers,
        warnings,
    })
}

/// A config file's place, and how it was chosen.
#[derive(Debug, PartialEq)]
pub(crate) struct Found {
    pub(crate) path: PathBuf,
    pub(crate) origin: &'static str,
}

/// Where this process's config is: `flag` (`--config`), else as [`find`] says; the error
/// lists every place looked.
pub(crate) fn locate(flag: Option<&Path>) -> Result<Found, String> {
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    let places = Places {
        cwd: Path::new("."),
        home: var("HOME").map(PathBuf::from),
        // The XDG base directory specification: a relative value is to be ignored.
        config_home: var(CONFIG_HOME_VAR)
            .map(PathBuf::from)
            .filter(|p| p.is_absolute()),
    };
    let (path, origin) = find(flag, var(CONFIG_VAR), &places)?;
    Ok(Found { path, origin })
}

/// The variable naming the user's configuration folder (XDG), `~/.config` when unset.
const CONFIG_HOME_VAR: &str = "XDG_CONFIG_HOME";

/// Where discovery looks, apart from the process: its directory and the user's folders.
struct Places<'a> {
    cwd: &'a Path,
    home: Option<PathBuf>,
    /// `$XDG_CONFIG_HOME`, when set to an absolute path.
    config_home: Option<PathBuf>,
}

impl Places<'_> {
    /// The user's own runvil config: `$XDG_CONFIG_HOME/runvil/mcp.json`, else
    /// `~/.config/runvil/mcp.json`.
    fn own(&self) -> Option<PathBuf> {
        let config_home = self
            .config_home
            .clone()
            .or_else(|| self.home.as_ref().map(|home| home.join(".config")))?;
        Some(config_home.join("runvil/mcp.json"))
    }
}

/// The config file to read, and how it was chosen.
fn find(
    flag: Option<&Path>,
    env: Option<OsString>,
    places: &Places<'_>,
) -> Result<(PathBuf, &'static str), String> {
    if let Some(path) = flag {
        return Ok((path.to_owned(), "from --config"));
    }
    if let Some(path) = env {
        return Ok((PathBuf::from(path), "from $RUNVIL_MCP_CONFIG"));
    }
    let cwd = places.cwd;
    let candidates = [
        (Some(cwd.join("mcp.json")), "found in the current directory"),
        (Some(cwd.join(".cursor/mcp.json")), "found in ./.cursor"),
        (Some(cwd.join(".vscode/mcp.json")), "found in ./.vscode"),
        (
            Some(cwd.join(".mcp.json")),
            "found in the current directory",
        ),
        (places.own(), "found in your config folder"),
        (
            places.home.as_ref().map(|h| h.join(".cursor/mcp.json")),
            "found in ~/.cursor",
        ),
    ];
    for (path, origin) in &candidates {
        // `exists`, not `is_file`: a file that is there but unreadable should fail with its
        // own error, not be skipped for one the person did not mean.
        if let Some(path) = path.as_ref().filter(|p| p.exists()) {
            return Ok((path.clone(), origin));
        }
    }
    let unknown = [
        "",
        "",
        "",
        "",
        "~/.config/runvil/mcp.json (neither XDG_CONFIG_HOME nor HOME is set)",
        "~/.cursor/mcp.json (HOME is not set)",
    ];
    let looked: Vec<String> = candidates
        .iter()
        .zip(unknown)
        .map(|((path, _), unknown)| {
            path.as_ref()
                .map_or_else(|| unknown.to_owned(), |p| p.display().to_string())
        })
        .collect();
    Err(format!(
        "no config file found. Looked for:\n  --config PATH (not given)\n  \
         ${CONFIG_VAR} (not set)\n  {}\nPass --config PATH, add a server with `runvil add \
         NAME URL`, or run `runvil demo` to see runvil at work without one.",
        looked.join("\n  ")
    ))
}

/// Reads `mcpServers` (or VS Code's `servers`) from the config file, and the warnings about
/// the file. A syntax error names the file and its line and column, never the text there.
fn read(path: &Path) -> Result<(Value, Vec<String>), String> {
    let shown = path.display();
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|file| file.take(MAX_CONFIG_BYTES + 1).read_to_end(&mut bytes))
        .map_err(|e| format!("cannot read {shown}: {e}"))?;
    if bytes.len() as u64 > MAX_CONFIG_BYTES {
        return Err(format!(
            "{shown} is larger than {} MiB, which no mcp.json needs",
            MAX_CONFIG_BYTES / 1024 / 1024
        ));
    }
    let parsed = jsonc::parse(&bytes).map_err(|e| format!("{shown}: {e}"))?;
    let Value::Object(mut root) = parsed.value else {
        return Err(format!("{shown} is not a JSON object"));
    };
    let key = servers_key(&root);
    let warnings = lint::warnings(&root, key, &parsed.duplicates);
    let servers = key.and_then(|key| root.remove(key)).unwrap_or(Value::Null);
    Ok((servers, warnings))
}

/// The key whose value is the servers: Cursor's and Claude's `mcpServers`, else VS Code's
/// `servers`.
fn servers_key(root: &Map<String, Value>) -> Option<&'static str> {
    ["mcpServers", "servers"]
        .into_iter()
        .find(|key| root.contains_key(*key))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fresh directory under the system's temp dir, removed on drop.
    struct Dir(PathBuf);

    impl Dir {
        fn new(name: &str) -> Self {
            let path = std::env::temp_dir()
                .join(format!("runvil-discovery-{name}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&path);
            std::fs::create_dir_all(&path).expect("temp dir");
            Self(path)
        }

        fn file(&self, relative: &str, text: &str) -> PathBuf {
            let path = self.0.join(relative);
            std::fs::create_dir_all(path.parent().expect("parent")).expect("dirs");
            std::fs::write(&path, text).expect("write");
            path
        }
    }

    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn the_first_source_present_wins() {
        let dir = Dir::new("order");
        let cwd = dir.0.join("project");
        let places = Places {
            cwd: &cwd,
            home: Some(dir.0.join("home")),
            config_home: None,
        };
        let found = |flag: Option<&Path>, env: Option<&str>| {
            find(flag, env.map(OsString::from), &places).expect("found")
        };
        // From the last to the first: each file, once there, is taken over every one before.
        let order = [
            ("home/.cursor/mcp.json", "found in ~/.cursor"),
            (
                "home/.config/runvil/mcp.json",
                "found in your config folder",
            ),
            ("project/.mcp.json", "found in the current directory"),
            ("project/.vscode/mcp.json", "found in ./.vscode"),
            ("project/.cursor/mcp.json", "found in ./.cursor"),
            ("project/mcp.json", "found in the current directory"),
        ];
        for (relative, origin) in order {
            let path = dir.file(relative, "{}");
            assert_eq!(found(None, None), (path, origin), "{relative}");
        }
        // Asked-for paths are taken as given, present or not: reading them says what is wrong.
        assert_eq!(
            found(None, Some("x.json")),
            (PathBuf::from("x.json"), "from $RUNVIL_MCP_CONFIG")
        );
        assert_eq!(
            found(Some(Path::new("y.json")), Some("x.json")),
            (PathBuf::from("y.json"), "from --config")
        );
    }

    #[test]
    fn nothing_found_lists_every_place_looked() {
        let dir = Dir::new("none");
        let places = Places {
            cwd: &dir.0,
            home: None,
            config_home: None,
        };
        let error = find(None, None, &places).expect_err("nothing there");
        let place = |relative: &str| dir.0.join(relative).display().to_string();
        assert_eq!(
            error,
            format!(
                "no config file found. Looked for:\n  --config PATH (not given)\n  \
                 $RUNVIL_MCP_CONFIG (not set)\n  {}\n  {}\n  {}\n  {}\n  \
                 ~/.config/runvil/mcp.json (neither XDG_CONFIG_HOME nor HOME is set)\n  \
                 ~/.cursor/mcp.json (HOME is not set)\nPass --config PATH, add a server with \
                 `runvil add NAME URL`, or run `runvil demo` to see runvil at work without one.",
                place("mcp.json"),
                place(".cursor/mcp.json"),
                place(".vscode/mcp.json"),
                place(".mcp.json"),
            )
        );
    }

    #[test]
    fn the_user_s_own_file_is_under_xdg_config_home_else_dot_config() {
        let places = |home: Option<&str>, config_home: Option<&str>| Places {
            cwd: Path::new("."),
            home: home.map(PathBuf::from),
            config_home: config_home.map(PathBuf::from),
        };
        assert_eq!(
            places(Some("/h"), None).own(),
            Some(PathBuf::from("/h/.config/runvil/mcp.json"))
        );
        assert_eq!(
            places(Some("/h"), Some("/x")).own(),
            Some(PathBuf::from("/x/runvil/mcp.json"))
        );
        assert_eq!(places(None, None).own(), None);
    }

    #[test]
    fn both_shapes_are_read() {
        let dir = Dir::new("shapes");
        let cursor = dir.file("a.json", r#"{"mcpServers": {"a": {}}}"#);
        let vscode = dir.file("b.json", "{\"servers\": {\"b\": {},}, // VS Code's\n}");
        let neither = dir.file("c.json", r#"{"inputs": []}"#);
        let list = dir.file("d.json", "[]");
        let servers = |path: &Path| read(path).map(|(servers, _)| servers);
        assert_eq!(servers(&cursor), Ok(serde_json::json!({"a": {}})));
        assert_eq!(servers(&vscode), Ok(serde_json::json!({"b": {}})));
        assert_eq!(servers(&neither), Ok(Value::Null));
        assert_eq!(
            servers(&list),
            Err(format!("{} is not a JSON object", list.display()))
        );
    }

    #[test]
    fn a_file_that_cannot_be_read_is_named_with_where_it_went_wrong() {
        let dir = Dir::new("errors");
        let bad = dir.file(
            "bad.json",
            "{\n  // the url:\n  \"url\" \"secret-token\"\n}",
        );
        assert_eq!(
            read(&bad),
            Err(format!("{}: line 3, column 9: expected `:`", bad.display()))
        );
        let huge = dir.file("huge.json", "");
        std::fs::write(&huge, vec![b' '; 4 * 1024 * 1024 + 1]).expect("write");
        assert_eq!(
            read(&huge),
            Err(format!(
                "{} is larger than 4 MiB, which no mcp.json needs",
                huge.display()
            ))
        );
        let at_most = dir.file("spaces.json", "");
        std::fs::write(
            &at_most,
            [&b"{}"[..], &[b' '; 4 * 1024 * 1024 - 2]].concat(),
        )
        .expect("write");
        assert_eq!(read(&at_most), Ok((Value::Null, Vec::new())));
    }

    #[test]
    fn the_warnings_come_with_the_servers() {
        let dir = Dir::new("warnings");
        let path = dir.file(
            "mcp.json",
            r#"{"mcpServers": {"x": {"url": "https://h/mcp", "disabled": true}}}"#,
        );
        let warning = "server \"x\": \"disabled\": true is ignored, so runvil connects to it; \
                       remove the entry to leave it out";
        assert_eq!(
            read(&path),
            Ok((
                serde_json::json!({"x": {"url": "https://h/mcp", "disabled": true}}),
                vec![warning.to_owned()]
            ))
        );
    }
}
