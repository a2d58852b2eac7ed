//! Which mcp.json a command reads, and the servers object in it.
//!
//! The order is `--config PATH`, `$RUNVIL_MCP_CONFIG`, `./mcp.json`, `./.cursor/mcp.json`,
//! `~/.cursor/mcp.json`: what the person said beats what the environment says beats what lies
//! around, and the project's own file beats the user's. A path that was asked for (by flag or
//! variable) is read or fails; only the last three are looked for. Finding is kept apart from
//! the process (its directory, environment and home are arguments) so it can be tested.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::cli::Source;

/// The variable naming the config when `--config` is not given.
pub(crate) const CONFIG_VAR: &str = "RUNVIL_MCP_CONFIG";

/// A config file that was read.
#[derive(Debug)]
pub(crate) struct Config {
    /// The file, as found.
    pub(crate) path: PathBuf,
    /// How it was chosen, for `runvil check` to say.
    pub(crate) origin: &'static str,
    /// Its `mcpServers` (or VS Code's `servers`) value; null when it has neither.
    pub(crate) servers: Value,
}

/// Finds and reads the config of this process.
pub(crate) fn load(source: &Source) -> Result<Config, String> {
    let home = std::env::var_os("HOME").filter(|h| !h.is_empty());
    let env = std::env::var_os(CONFIG_VAR).filter(|v| !v.is_empty());
    let (path, origin) = find(source.config.as_deref(), env, Path::new("."), home)?;
    let servers = read(&path)?;
    Ok(Config {
        path,
        origin,
        servers,
    })
}

/// The config file to read, and how it was chosen.
fn find(
    flag: Option<&Path>,
    env: Option<OsString>,
    cwd: &Path,
    home: Option<OsString>,
) -> Result<(PathBuf, &'static str), String> {
    if let Some(path) = flag {
        return Ok((path.to_owned(), "from --config"));
    }
    if let Some(path) = env {
        return Ok((PathBuf::from(path), "from $RUNVIL_MCP_CONFIG"));
    }
    let home = home.map(PathBuf::from);
    let candidates = [
        (Some(cwd.join("mcp.json")), "found in the current directory"),
        (Some(cwd.join(".cursor/mcp.json")), "found in ./.cursor"),
        (
            home.as_ref().map(|h| h.join(".cursor/mcp.json")),
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
    let shown = |path: &Option<PathBuf>| {
        path.as_ref().map_or_else(
            || "~/.cursor/mcp.json (HOME is not set)".to_owned(),
            |p| p.display().to_string(),
        )
    };
    let looked: Vec<String> = candidates.iter().map(|(p, _)| shown(p)).collect();
    Err(format!(
        "no config file found. Looked for:\n  --config PATH (not given)\n  \
         ${CONFIG_VAR} (not set)\n  {}\nPass --config PATH, or run `runvil demo` to see the \
         Pack without one.",
        looked.join("\n  ")
    ))
}

/// Reads `mcpServers` (or VS Code's `servers`) from the config file.
fn read(path: &Path) -> Result<Value, String> {
    let shown = path.display();
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {shown}: {e}"))?;
    let config: Value =
        serde_json::from_str(&text).map_err(|e| format!("{shown} is not JSON: {e}"))?;
    if !config.is_object() {
        return Err(format!("{shown} is not a JSON object"));
    }
    Ok(config
        .get("mcpServers")
        .or_else(|| config.get("servers"))
        .cloned()
        .unwrap_or(Value::Null))
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
        let home = dir.0.join("home");
        let home_file = dir.file("home/.cursor/mcp.json", "{}");
        let home_var = Some(home.into_os_string());
        let found = |flag: Option<&Path>, env: Option<&str>| {
            find(flag, env.map(OsString::from), &cwd, home_var.clone()).expect("found")
        };
        assert_eq!(found(None, None), (home_file, "found in ~/.cursor"));
        let cursor = dir.file("project/.cursor/mcp.json", "{}");
        assert_eq!(found(None, None), (cursor, "found in ./.cursor"));
        let here = dir.file("project/mcp.json", "{}");
        assert_eq!(found(None, None), (here, "found in the current directory"));
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
        let error = find(None, None, &dir.0, None).expect_err("nothing there");
        assert!(error.contains("--config PATH (not given)"), "{error}");
        assert!(error.contains("$RUNVIL_MCP_CONFIG (not set)"), "{error}");
        assert!(error.contains(&dir.0.join("mcp.json").display().to_string()));
        assert!(error.contains(&dir.0.join(".cursor/mcp.json").display().to_string()));
        assert!(
            error.contains("~/.cursor/mcp.json (HOME is not set)"),
            "{error}"
        );
    }

    #[test]
    fn both_shapes_are_read() {
        let dir = Dir::new("shapes");
        let cursor = dir.file("a.json", r#"{"mcpServers": {"a": {}}}"#);
        let vscode = dir.file("b.json", r#"{"servers": {"b": {}}}"#);
        let neither = dir.file("c.json", r#"{"inputs": []}"#);
        let list = dir.file("d.json", "[]");
        assert_eq!(read(&cursor), Ok(serde_json::json!({"a": {}})));
        assert_eq!(read(&vscode), Ok(serde_json::json!({"b": {}})));
        assert_eq!(read(&neither), Ok(Value::Null));
        assert_eq!(
            read(&list),
            Err(format!("{} is not a JSON object", list.display()))
        );
    }
}
