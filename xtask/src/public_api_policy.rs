//! `plugin_mcp`'s public surface is exactly `pub fn install`.
//!
//! A Host reaches a Plugin only through the Plugin contract (`runvil-plugin`), which `install`
//! hands over; anything else `plugin_mcp` exported would become an API that Hosts could couple
//! to. The sources are parsed with `syn`, not compiled:
//!
//! - only `src/lib.rs` is searched for `pub`: items of the other files sit in private modules
//!   and cannot be reached from outside (a `pub` on them is flagged by the workspace lint
//!   `unreachable_pub`); a private module re-exported with `pub use` is caught here;
//! - every plain `pub` in `src/lib.rs` counts, on an item, a field, a variant's field or an
//!   item of an inline module; restricted visibility (`pub(crate)`, `pub(super)`, `pub(in
//!   path)`) is fine;
//! - `#[macro_export]` is looked for in every file under `src/`, since an exported macro is
//!   public wherever it is defined.

use syn::visit::{self, Visit};
use syn::{Attribute, Item, ItemFn, Visibility};

/// One source file: its path relative to the package root (with `/`), and its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceFile {
    /// The path relative to the package root, e.g. `src/lib.rs`.
    pub path: String,
    /// The file's text.
    pub text: String,
}

/// The crate root that must declare nothing public but `pub fn install`.
pub const CRATE_ROOT: &str = "src/lib.rs";

/// Returns a violation for every plain `pub` in `src/lib.rs` other than `pub fn install`, and
/// for every `#[macro_export]` in any of `files` (the `.rs` files under `src/`). A missing
/// `src/lib.rs`, or a file that does not parse, is a violation too.
pub fn only_install_is_public(files: &[SourceFile]) -> Vec<String> {
    let mut violations = Vec::new();
    if !files.iter().any(|file| file.path == CRATE_ROOT) {
        violations.push(format!("plugin_mcp has no {CRATE_ROOT} to check"));
    }
    for file in files {
        let parsed = match syn::parse_file(&file.text) {
            Ok(parsed) => parsed,
            Err(error) => {
                violations.push(format!("{}: does not parse as Rust: {error}", file.path));
                continue;
            }
        };
        let mut finder = Finder {
            crate_root: file.path == CRATE_ROOT,
            ..Finder::default()
        };
        finder.visit_file(&parsed);
        violations.extend(finder.public.into_iter().map(|item| {
            format!(
                "{}: {item} is public; plugin_mcp may make only `pub fn install` public (use \
                 `pub(crate)` or no `pub`)",
                file.path
            )
        }));
        if finder.macro_exports > 0 {
            violations.push(format!(
                "{}: `#[macro_export]` makes a macro public; plugin_mcp exports only `pub fn \
                 install`",
                file.path
            ));
        }
    }
    violations
}

/// Walks one file, noting each plain `pub` (in the crate root) by the item it is in.
#[derive(Default)]
struct Finder {
    crate_root: bool,
    /// The innermost item being walked, as `pub` findings name it.
    item: String,
    public: Vec<String>,
    macro_exports: usize,
}

impl<'ast> Visit<'ast> for Finder {
    fn visit_item(&mut self, item: &'ast Item) {
        let outer = std::mem::replace(&mut self.item, describe(item));
        // `pub macro` (macros 2.0) is not parsed into an item with a visibility.
        if let Item::Verbatim(tokens) = item
            && self.crate_root
            && tokens.to_string().starts_with("pub ")
        {
            self.public.push(self.item.clone());
        }
        visit::visit_item(self, item);
        self.item = outer;
    }

    fn visit_item_fn(&mut self, function: &'ast ItemFn) {
        let plain_install = function.sig.ident == "install" && function.sig.asyncness.is_none();
        if plain_install && matches!(function.vis, Visibility::Public(_)) {
            // The one public item: only what is inside it is looked at.
            visit::visit_block(self, &function.block);
        } else {
            visit::visit_item_fn(self, function);
        }
    }

    fn visit_visibility(&mut self, visibility: &'ast Visibility) {
        if self.crate_root && matches!(visibility, Visibility::Public(_)) {
            self.public.push(self.item.clone());
        }
    }

    fn visit_attribute(&mut self, attribute: &'ast Attribute) {
        if attribute.path().is_ident("macro_export") {
            self.macro_exports += 1;
        }
    }
}

/// `` `struct Config` ``, `` `fn helper` ``, ...: the item's kind and name.
fn describe(item: &Item) -> String {
    let (kind, name) = match item {
        Item::Const(item) => ("const", item.ident.to_string()),
        Item::Enum(item) => ("enum", item.ident.to_string()),
        Item::Fn(item) => ("fn", item.sig.ident.to_string()),
        Item::Mod(item) => ("mod", item.ident.to_string()),
        Item::Static(item) => ("static", item.ident.to_string()),
        Item::Struct(item) => ("struct", item.ident.to_string()),
        Item::Trait(item) => ("trait", item.ident.to_string()),
        Item::Type(item) => ("type", item.ident.to_string()),
        Item::Union(item) => ("union", item.ident.to_string()),
        Item::Use(_) => ("use", String::new()),
        Item::Impl(_) => ("impl", String::new()),
        _ => ("item", String::new()),
    };
    format!("`{}`", format!("{kind} {name}").trim_end())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lib(text: &str) -> Vec<SourceFile> {
        vec![SourceFile {
            path: CRATE_ROOT.to_owned(),
            text: text.to_owned(),
        }]
    }

    const CLEAN_LIB: &str = r###"//! plugin_mcp: pub fn in a doc comment is prose.
/// Installs the Pack; a `pub struct` mentioned in a doc comment does not count.
pub fn install(host: &mut dyn Host) -> Result<(), Error> {
    let text = "pub struct NotCode; pub fn x()";
    let raw = r##"pub mod "quoted" inside"##;
    let quote = '"'; let escaped = '\''; // pub use comment
    /* pub enum in a /* nested */ block comment */
    helper::<'static>(text, raw, quote, escaped)
}
mod client;
pub(crate) mod config;
pub(super) fn up() {}
pub(in crate::config) struct Narrow;
pub(self) const X: u8 = 1;
pub(crate) use config::Config;
macro_rules! local { () => {} }
"###;

    #[test]
    fn clean_crate_root_passes() {
        let mut files = lib(CLEAN_LIB);
        files.push(SourceFile {
            path: "src/client.rs".to_owned(),
            text: "// no #[macro_export] here\npub(crate) fn connect() {}\npub fn x() {}\n"
                .to_owned(),
        });
        assert_eq!(only_install_is_public(&files), Vec::<String>::new());
    }

    #[test]
    fn every_kind_of_public_item_is_reported() {
        let kinds = [
            ("fn helper() {}", "`fn helper`"),
            ("mod client;", "`mod client`"),
            ("use client::Client;", "`use`"),
            ("struct Config;", "`struct Config`"),
            ("enum Mode { A }", "`enum Mode`"),
            ("const LIMIT: usize = 1;", "`const LIMIT`"),
            ("static NAME: &str = \"x\";", "`static NAME`"),
            ("type Alias = u8;", "`type Alias`"),
            ("trait Tool {}", "`trait Tool`"),
            ("macro m() {}", "`item`"),
            ("async fn install() {}", "`fn install`"),
            ("union U { a: u8 }", "`union U`"),
        ];
        for (item, named) in kinds {
            let text = format!("pub fn install() {{}}\npub {item}\n");
            let violations = only_install_is_public(&lib(&text));
            assert_eq!(violations.len(), 1, "{item}: {violations:?}");
            assert!(
                violations[0].starts_with(&format!("src/lib.rs: {named} is public")),
                "{violations:?}"
            );
        }
    }

    #[test]
    fn public_fields_and_items_of_inline_modules_are_reported() {
        let text = "pub fn install() {}\nstruct S { pub a: u8 }\nmod m { pub fn f() {} }\n\
                    impl S { pub fn g(&self) {} }\n";
        let violations = only_install_is_public(&lib(text));
        let named: Vec<&str> = violations
            .iter()
            .map(|v| v.split(" is public").next().unwrap_or(""))
            .collect();
        assert_eq!(
            named,
            [
                "src/lib.rs: `struct S`",
                "src/lib.rs: `fn f`",
                "src/lib.rs: `impl`"
            ]
        );
    }

    #[test]
    fn only_exactly_install_is_allowed() {
        let violations = only_install_is_public(&lib("pub fn install_all() {}\n"));
        assert_eq!(violations.len(), 1, "{violations:?}");
        assert!(violations[0].contains("`fn install_all`"), "{violations:?}");
    }

    #[test]
    fn macro_export_anywhere_under_src_is_reported() {
        let mut files = lib("pub fn install() {}\nmod client;\n");
        files.push(SourceFile {
            path: "src/client/macros.rs".to_owned(),
            text: "\n#[macro_export]\nmacro_rules! leak { () => {} }\n".to_owned(),
        });
        let violations = only_install_is_public(&files);
        assert_eq!(violations.len(), 1, "{violations:?}");
        assert!(violations[0].starts_with("src/client/macros.rs: `#[macro_export]`"));
    }

    #[test]
    fn missing_crate_root_and_unparsable_files_are_reported() {
        assert_eq!(
            only_install_is_public(&[]),
            ["plugin_mcp has no src/lib.rs to check"]
        );
        let violations = only_install_is_public(&lib("pub fn install( {}\n"));
        assert_eq!(violations.len(), 1, "{violations:?}");
        assert!(violations[0].starts_with("src/lib.rs: does not parse as Rust"));
    }
}
