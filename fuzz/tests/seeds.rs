//! Runs every fuzz target over its committed seeds (`seeds/<target>/`), and over the corpus
//! a fuzzing run left (`corpus/<target>/`, not committed) when there is one: a smoke test that
//! needs neither nightly nor libFuzzer. `cargo test` in `fuzz/`.

#![forbid(unsafe_code)]

use std::fs;
use std::path::Path;

fn run(target: &str, body: fn(&[u8])) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let seeds = root.join("seeds").join(target);
    let corpus = root.join("corpus").join(target);
    let mut inputs = 0;
    for dir in [seeds.as_path(), corpus.as_path()] {
        let Ok(entries) = fs::read_dir(dir) else {
            assert_ne!(dir, seeds, "no seeds for {target}");
            continue;
        };
        for entry in entries {
            let path = entry.expect("a directory entry").path();
            let bytes = match fs::read(&path) {
                Ok(bytes) => bytes,
                // A fuzzing run still going may have merged this corpus entry away.
                Err(e) if dir == corpus && e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => panic!("{} is not readable: {e}", path.display()),
            };
            // A panic names the input, so it can be replayed with `cargo fuzz run`.
            eprintln!("{target}: {}", path.display());
            body(&bytes);
            inputs += 1;
        }
    }
    assert!(inputs > 0, "no input for {target}");
}

#[test]
fn config() {
    run("config", plugin_mcp::fuzzing::config);
}

#[test]
fn sse() {
    run("sse", plugin_mcp::fuzzing::sse);
}

#[test]
fn jsonrpc() {
    run("jsonrpc", plugin_mcp::fuzzing::jsonrpc);
}

#[test]
fn tools() {
    run("tools", plugin_mcp::fuzzing::tools);
}

#[test]
fn result() {
    run("result", plugin_mcp::fuzzing::result);
}
