//! Server data is opened only by the envelope's checks.
//!
//! `plugin_mcp` holds what a server sent as `text::Untrusted`, whose field is private to
//! `src/text/`. Its openers for checking, `for_check` and `into_for_check`, are `pub(crate)`
//! (the envelope is a sibling module, which no visibility can name alone), so this check keeps
//! them where they belong: a method call of either name outside `src/envelope/` and
//! `src/text/` is a violation. The sources are parsed with `syn`, so a comment or a string
//! that names the method is not a call.

use syn::visit::{self, Visit};

use crate::public_api_policy::SourceFile;

/// The openers of `Untrusted` that only the envelope's checks may call.
pub const OPENERS: [&str; 2] = ["for_check", "into_for_check"];

/// Where the openers may be called: the envelope's checks, and the taint module itself.
const ALLOWED_UNDER: [&str; 2] = ["src/envelope/", "src/text/"];

/// Returns a violation for every call of an opener in `files` outside the allowed folders.
pub fn opened_only_by_the_envelope(files: &[SourceFile]) -> Vec<String> {
    let mut violations = Vec::new();
    for file in files {
        if ALLOWED_UNDER.iter().any(|dir| file.path.starts_with(dir)) {
            continue;
        }
        // A file that does not parse is reported by `only_install_is_public`.
        let Ok(parsed) = syn::parse_file(&file.text) else {
            continue;
        };
        let mut calls = Calls::default();
        calls.visit_file(&parsed);
        violations.extend(calls.found.into_iter().map(|method| {
            format!(
                "{}: calls `{method}`, which opens server data; only the envelope's checks \
                 (src/envelope/) may",
                file.path
            )
        }));
    }
    violations
}

/// The opener calls found in one file, by method name.
#[derive(Default)]
struct Calls {
    found: Vec<String>,
}

impl<'ast> Visit<'ast> for Calls {
    fn visit_expr_method_call(&mut self, call: &'ast syn::ExprMethodCall) {
        let method = call.method.to_string();
        if OPENERS.contains(&method.as_str()) {
            self.found.push(method);
        }
        visit::visit_expr_method_call(self, call);
    }
}
