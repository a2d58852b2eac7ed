//! `runvil add` and `runvil remove` change one server of a config and nothing else (comments,
//! other entries and fields, layout), write the file the other commands read (else a new
//! `./mcp.json`), never print a header's value, and refuse an existing name without `--force`;
//! `runvil completions` prints clap's completion script.

mod support;

use std::os::unix::fs::PermissionsExt;

use support::{Temp, runvil, runvil_in, text};

const SECRET: &str = "sk-never-printed-4242";

const VS_CODE_FILE: &str = "{
  // The servers of this workspace.
  \"servers\": {
    \"web\": {
      \"type\": \"http\",
      \"url\": \"https://example.com/mcp\", // the old one
      \"disabled\": false
    },
  },
  \"inputs\": [{ \"type\": \"promptString\", \"id\": \"token\" }],
}
";

#[test]
fn add_writes_the_config_the_other_commands_read_keeping_its_comments() {
    let project = Temp::dir();
    let home = Temp::dir();
    let path = project.write(".vscode/mcp.json", VS_CODE_FILE);
    let header = format!("X-Api-Key: {SECRET}");
    let out = runvil_in(
        &project,
        &home,
        &[
            "add",
            "docs",
            "https://docs.example/mcp",
            "--header",
            &header,
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(
        stderr.starts_with("runvil: added server \"docs\" to ./.vscode/mcp.json\n"),
        "{stderr}"
    );
    assert!(
        stderr.contains("--header 'X-Api-Key: ${env:X_API_KEY}'"),
        "the hint: {stderr}"
    );
    assert!(!stderr.contains(SECRET), "{stderr}");
    assert!(out.stdout.is_empty());
    let written = std::fs::read_to_string(&path).expect("the file");
    assert_eq!(
        written,
        format!(
            "{{
  // The servers of this workspace.
  \"servers\": {{
    \"web\": {{
      \"type\": \"http\",
      \"url\": \"https://example.com/mcp\", // the old one
      \"disabled\": false
    }},
    \"docs\": {{
      \"url\": \"https://docs.example/mcp\",
      \"headers\": {{
        \"X-Api-Key\": \"{SECRET}\"
      }}
    }},
  }},
  \"inputs\": [{{ \"type\": \"promptString\", \"id\": \"token\" }}],
}}
"
        )
    );
    // The other commands read it.
    let out = runvil_in(&project, &home, &["check"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        "./.vscode/mcp.json (found in ./.vscode)\n  docs  accepted\n  web   accepted\n2 of 2 accepted\n"
    );

    // An existing name is refused, the file left as it was; --force replaces it.
    let out = runvil_in(
        &project,
        &home,
        &["add", "docs", "https://other.example/mcp"],
    );
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        text(&out.stderr),
        "runvil: ./.vscode/mcp.json already has a server \"docs\"; pass --force to replace it\n"
    );
    assert_eq!(std::fs::read_to_string(&path).expect("the file"), written);
    let out = runvil_in(
        &project,
        &home,
        &["add", "docs", "https://other.example/mcp", "--force"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stderr),
        "runvil: replaced server \"docs\" in ./.vscode/mcp.json\n"
    );
    let replaced = std::fs::read_to_string(&path).expect("the file");
    assert!(!replaced.contains(SECRET), "{replaced}");
    assert!(
        replaced
            .contains("    \"docs\": {\n      \"url\": \"https://other.example/mcp\"\n    },\n"),
        "{replaced}"
    );
    assert!(replaced.contains("// the old one"), "{replaced}");

    // remove takes the one entry out, and names the others for a name it lacks.
    let out = runvil_in(&project, &home, &["remove", "docs"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stderr),
        "runvil: removed server \"docs\" from ./.vscode/mcp.json\n"
    );
    assert_eq!(
        std::fs::read_to_string(&path).expect("the file"),
        VS_CODE_FILE
    );
    let out = runvil_in(&project, &home, &["remove", "docs"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        text(&out.stderr),
        "runvil: unknown namespace \"docs\" in ./.vscode/mcp.json; the namespaces are: web\n"
    );
}

#[test]
fn add_creates_mcp_json_when_there_is_no_config_and_its_own_permissions_are_the_user_s() {
    let project = Temp::dir();
    let home = Temp::dir();
    let out = runvil_in(
        &project,
        &home,
        &[
            "add",
            "github",
            "https://api.githubcopilot.com/mcp/",
            "-H",
            "Authorization: Bearer ${env:RUNVIL_TEST_UNSET_TOKEN}",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stderr),
        "runvil: created ./mcp.json with server \"github\"\n\
         runvil: note: as things stand, runvil refuses it: environment variable RUNVIL_TEST_UNSET_TOKEN \
         is not set (used in headers.Authorization)\n",
        "no hint for a value read from a variable; what check would say"
    );
    let path = project.path().join("mcp.json");
    assert_eq!(
        std::fs::read_to_string(&path).expect("created"),
        "{
  \"mcpServers\": {
    \"github\": {
      \"url\": \"https://api.githubcopilot.com/mcp/\",
      \"headers\": {
        \"Authorization\": \"Bearer ${env:RUNVIL_TEST_UNSET_TOKEN}\"
      }
    }
  }
}
"
    );
    let mode = std::fs::metadata(&path).expect("file").permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
}

#[test]
fn add_names_what_is_wrong_and_never_a_value() {
    let dir = Temp::dir();
    let config = dir.path().join("mcp.json");
    let config = config.to_str().expect("UTF-8");
    let cases: [(&[&str], &str); 3] = [
        (
            &["add", "x", "ftp://host/?key=sk-never-printed-4242"],
            "runvil: URL must start with http:// or https://\n",
        ),
        (
            &["add", "x", "https://h/mcp", "-H", SECRET],
            "runvil: --header number 1 is not `Name: value`\n",
        ),
        (
            &["add", "x", "https://h/mcp", "-H", "A: 1", "-H", "a: 2"],
            "runvil: header a is given twice\n",
        ),
    ];
    for (args, said) in cases {
        let mut args = args.to_vec();
        args.extend(["--config", config]);
        let out = runvil(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert_eq!(text(&out.stderr), said, "{args:?}");
        assert!(!std::path::Path::new(config).exists());
    }
    // A file that is not JSON is named with its line and column, and left alone.
    std::fs::write(config, "{\n  \"mcpServers\": {\n").expect("written");
    let out = runvil(&["add", "x", "https://h/mcp", "--config", config]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        text(&out.stderr),
        format!("runvil: {config}: line 3, column 0: EOF while parsing an object\n")
    );
}

#[test]
fn completions_are_clap_s_for_each_shell() {
    for (shell, marker) in [
        ("bash", "_runvil()"),
        ("zsh", "#compdef runvil"),
        ("fish", "complete -c runvil"),
    ] {
        let out = runvil(&["completions", shell]);
        assert_eq!(out.status.code(), Some(0), "{shell}");
        let script = text(&out.stdout);
        assert!(script.contains(marker), "{shell}: {script}");
        for command in ["tools", "call", "login", "add", "remove"] {
            assert!(script.contains(command), "{shell}: {command}");
        }
    }
    let out = runvil(&["completions", "cmd"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("invalid value 'cmd'"));
}
