//! The config files people already have: VS Code's `.vscode/mcp.json` (comments, trailing
//! commas, a byte-order mark) and Claude Code's `.mcp.json` are found and read, `runvil check`
//! warns about what runvil will not honour as those clients do without changing its exit
//! code (and `tools` and `call` say the same on stderr), and a syntax error names the file,
//! line and column.

mod support;

use std::process::Output;

use support::{Temp, runvil_in, text, unreachable_url};

/// `runvil check` in `project`, with `home` as HOME.
fn check_in(project: &Temp, home: &Temp) -> Output {
    runvil_in(project, home, &["check"])
}

const VS_CODE_FILE: &str = "\u{feff}{
  // The servers of this workspace.
  \"servers\": {
    \"web\": {
      \"type\": \"http\",
      \"url\": \"https://example.com/mcp\",
      \"headers\": { \"Authorization\": \"Bearer ${input:token}\", },
    },
    /* Windsurf's spelling,
       copied over */
    \"surf\": { \"serverUrl\": \"https://example.com/mcp\" },
    \"bridge\": {
      \"command\": \"npx\",
      \"args\": [\"-y\", \"mcp-remote\", \"https://example.com/mcp?key=never-printed\"],
    },
    \"off\": { \"url\": \"https://example.com/mcp\", \"disabled\": true },
  },
  \"inputs\": [{ \"type\": \"promptString\", \"id\": \"token\", \"password\": true, },],
}
";

#[test]
fn vs_code_s_file_is_found_read_and_warned_about() {
    let project = Temp::dir();
    let home = Temp::dir();
    project.write(".vscode/mcp.json", VS_CODE_FILE);
    let out = check_in(&project, &home);
    // Two entries are refused: the exit code is the verdicts', whatever the warnings.
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        "./.vscode/mcp.json (found in ./.vscode)
  bridge  refused: local MCP servers (command) are not supported yet
  off     disabled
  surf    refused: url is missing
  web     accepted
1 of 3 accepted, 1 disabled
"
    );
    assert_eq!(
        text(&out.stderr),
        "runvil: warning: server \"bridge\": runs mcp-remote, a local bridge that runvil does not start; runvil reaches the server itself: write {\"url\": \"<the URL after mcp-remote>\"}
runvil: warning: server \"surf\": serverUrl is ignored; runvil reads url
runvil: warning: server \"web\": headers.Authorization holds ${input:token}, which runvil passes as written (it prompts for no input); write ${env:NAME} and set the variable NAME
"
    );
}

#[test]
fn tools_and_call_say_the_warnings_check_says() {
    let project = Temp::dir();
    let home = Temp::dir();
    let entry = serde_json::json!({"url": unreachable_url(), "serverUrl": "https://h/mcp"});
    project.write(
        "mcp.json",
        &format!(r#"{{"mcpServers": {{"surf": {entry}}}}}"#),
    );
    let warning = "runvil: warning: server \"surf\": serverUrl is ignored; runvil reads url\n";
    for command in [
        &["tools", "--wait", "0"][..],
        &["call", "surf", "t", "--wait", "0"],
    ] {
        let out = runvil_in(&project, &home, command);
        let stderr = text(&out.stderr);
        assert!(stderr.starts_with(warning), "{command:?}: {stderr}");
    }
}

#[test]
fn warnings_leave_an_all_accepted_check_at_0() {
    let project = Temp::dir();
    let home = Temp::dir();
    // Claude Code's project file, with its shell-style variables.
    project.write(
        ".mcp.json",
        r#"{"mcpServers": {"api": {"type": "http", "url": "https://example.com/mcp",
            "headers": {"Authorization": "Bearer ${API_KEY:-sk-never-printed}"}}}}"#,
    );
    let out = check_in(&project, &home);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        "./.mcp.json (found in the current directory)\n  api  accepted\n1 of 1 accepted\n"
    );
    assert_eq!(
        text(&out.stderr),
        "runvil: warning: server \"api\": headers.Authorization holds ${API_KEY:-...}, which runvil passes as written; write ${env:API_KEY} (runvil has no default values)\n"
    );
}

#[test]
fn a_syntax_error_names_the_file_line_and_column_of_the_original_text() {
    let project = Temp::dir();
    let home = Temp::dir();
    project.write(
        ".vscode/mcp.json",
        "\u{feff}{\n  /* a comment */ \"servers\": {\n    // the token:\n    \"x\": {\"url\" \"https://example.com/mcp?key=never-printed\"}\n  }\n}\n",
    );
    let out = check_in(&project, &home);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(text(&out.stdout), "");
    assert_eq!(
        text(&out.stderr),
        "runvil: ./.vscode/mcp.json: line 4, column 17: expected `:`\n"
    );
}

#[test]
fn project_files_are_taken_mcp_json_then_cursor_s_then_vs_code_s_then_claude_s() {
    let project = Temp::dir();
    let home = Temp::dir();
    let entry = |name: &str| {
        format!(r#"{{"servers": {{"{name}": {{"url": "https://example.com/mcp"}}}}}}"#)
    };
    let first_lines = || {
        let out = check_in(&project, &home);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        text(&out.stdout)
            .lines()
            .take(2)
            .collect::<Vec<_>>()
            .join("\n")
    };
    project.write(".mcp.json", &entry("claude"));
    assert_eq!(
        first_lines(),
        "./.mcp.json (found in the current directory)\n  claude  accepted"
    );
    project.write(".vscode/mcp.json", &entry("vscode"));
    assert_eq!(
        first_lines(),
        "./.vscode/mcp.json (found in ./.vscode)\n  vscode  accepted"
    );
    project.write(".cursor/mcp.json", &entry("cursor"));
    assert_eq!(
        first_lines(),
        "./.cursor/mcp.json (found in ./.cursor)\n  cursor  accepted"
    );
    project.write("mcp.json", &entry("own"));
    assert_eq!(
        first_lines(),
        "./mcp.json (found in the current directory)\n  own  accepted"
    );
}

#[test]
fn the_user_s_own_file_comes_after_the_project_s_and_before_cursor_s() {
    let project = Temp::dir();
    let home = Temp::dir();
    let entry = |name: &str| {
        format!(r#"{{"mcpServers": {{"{name}": {{"url": "https://example.com/mcp"}}}}}}"#)
    };
    let first_lines = |xdg: Option<&Temp>| {
        let mut command = support::runvil_command(&["check"]);
        command
            .current_dir(project.path())
            .env("HOME", home.path())
            .env_remove("XDG_CONFIG_HOME");
        if let Some(xdg) = xdg {
            command.env("XDG_CONFIG_HOME", xdg.path());
        }
        let out = command.output().expect("runvil runs");
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        text(&out.stdout)
            .lines()
            .take(2)
            .collect::<Vec<_>>()
            .join("\n")
    };
    let cursor = home.write(".cursor/mcp.json", &entry("cursor"));
    assert_eq!(
        first_lines(None),
        format!(
            "{} (found in ~/.cursor)\n  cursor  accepted",
            cursor.display()
        )
    );
    let own = home.write(".config/runvil/mcp.json", &entry("own"));
    assert_eq!(
        first_lines(None),
        format!(
            "{} (found in your config folder)\n  own  accepted",
            own.display()
        )
    );
    // $XDG_CONFIG_HOME moves the user's folder: ~/.config is no longer looked at.
    let xdg = Temp::dir();
    assert_eq!(
        first_lines(Some(&xdg)),
        format!(
            "{} (found in ~/.cursor)\n  cursor  accepted",
            cursor.display()
        )
    );
    let moved = xdg.write("runvil/mcp.json", &entry("xdg"));
    assert_eq!(
        first_lines(Some(&xdg)),
        format!(
            "{} (found in your config folder)\n  xdg  accepted",
            moved.display()
        )
    );
    project.write(".mcp.json", &entry("claude"));
    assert_eq!(
        first_lines(Some(&xdg)),
        "./.mcp.json (found in the current directory)\n  claude  accepted"
    );
}
