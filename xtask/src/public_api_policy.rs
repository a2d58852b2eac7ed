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
//!   public wherever it is defined;
//! - an item under exactly `#[cfg(fuzzing)]` (the fuzz targets' bodies) is not in a normal
//!   build, the configuration this check is for, and is passed over.

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
        if only_for_fuzzing(item) {
            return;
        }
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
            // The one public item (a plain `fn`: an `async` one would not be the contract's
            // entry point): only what is inside it is looked at.
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

/// Whether `item` carries `#[cfg(fuzzing)]`, which cargo-fuzz alone sets: nothing looser
/// (`cfg(not(fuzzing))`, `cfg(any(fuzzing, ...))`) is passed over.
fn only_for_fuzzing(item: &Item) -> bool {
    let attrs = match item {
        Item::Const(item) => &item.attrs,
        Item::Enum(item) => &item.attrs,
        Item::Fn(item) => &item.attrs,
        Item::Mod(item) => &item.attrs,
        Item::Static(item) => &item.attrs,
        Item::Struct(item) => &item.attrs,
        Item::Trait(item) => &item.attrs,
        Item::Type(item) => &item.attrs,
        Item::Union(item) => &item.attrs,
        Item::Use(item) => &item.attrs,
        _ => return false,
    };
    attrs.iter().any(|attr| {
        attr.path().is_ident("cfg")
            && attr
                .parse_args::<syn::Ident>()
                .is_ok_and(|ident| ident == "fuzzing")
    })
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

    fn check(files: &[(&str, &str)]) -> Vec<String> {
        let file = |(path, text): &(&str, &str)| SourceFile {
            path: (*path).to_owned(),
            text: (*text).to_owned(),
        };
        only_install_is_public(&files.iter().map(file).collect::<Vec<_>>())
    }

    /// What each violation names: `path: item`.
    fn named(violations: &[String]) -> Vec<&str> {
        violations
            .iter()
            .map(|v| v.split(" is public").next().unwrap_or(v))
            .collect()
    }

    #[test]
    fn clean_crate_root_passes() {
        let lib = "//! `pub struct` in prose.\npub fn install() { let _ = \"pub fn x()\"; }\n\
                   mod client;\npub(crate) mod config;\npub(super) fn up() {}\n\
                   pub(in crate::config) struct Narrow;\npub(crate) use config::Config;\n\
                   macro_rules! local { () => {} }\n";
        // Outside the crate root, `pub` is unreachable (the lint's business, not this check's).
        let client = "// no #[macro_export] here\npub fn connect() {}\n";
        assert_eq!(
            check(&[(CRATE_ROOT, lib), ("src/client.rs", client)]),
            Vec::<String>::new()
        );
    }

    #[test]
    fn every_kind_of_public_item_is_reported() {
        let items = "fn helper() {}|mod client {}|use client::Client;|struct Config;|enum Mode { A }|\
                     const LIMIT: usize = 1;|static NAME: u8 = 1;|type Alias = u8;|trait Tool {}|\
                     macro m() {}|async fn install() {}|union U { a: u8 }|fn install_all() {}";
        let lib: String = items
            .split('|')
            .map(|item| format!("pub {item}\n"))
            .collect();
        let lib = format!("pub fn install() {{}}\n{lib}");
        assert_eq!(
            named(&check(&[(CRATE_ROOT, &lib)])).join(", "),
            "src/lib.rs: `fn helper`, src/lib.rs: `mod client`, src/lib.rs: `use`, src/lib.rs: \
             `struct Config`, src/lib.rs: `enum Mode`, src/lib.rs: `const LIMIT`, src/lib.rs: \
             `static NAME`, src/lib.rs: `type Alias`, src/lib.rs: `trait Tool`, src/lib.rs: \
             `item`, src/lib.rs: `fn install`, src/lib.rs: `union U`, src/lib.rs: `fn install_all`"
        );
    }

    #[test]
    fn only_an_item_under_cfg_fuzzing_is_passed_over() {
        let lib = "pub fn install() {}\n#[cfg(fuzzing)]\npub mod fuzzing;\n\
                   #[cfg(not(fuzzing))]\npub mod a;\n#[cfg(any(fuzzing, test))]\npub mod b;\n\
                   #[cfg(test)]\npub mod c;\n";
        assert_eq!(
            named(&check(&[(CRATE_ROOT, lib)])),
            [
                "src/lib.rs: `mod a`",
                "src/lib.rs: `mod b`",
                "src/lib.rs: `mod c`"
            ]
        );
    }

    #[test]
    fn public_fields_and_items_of_inline_modules_are_reported() {
        let lib = "pub fn install() {}\nstruct S { pub a: u8 }\nmod m { pub fn f() {} }\n\
                   impl S { pub fn g(&self) {} }\n";
        assert_eq!(
            named(&check(&[(CRATE_ROOT, lib)])),
            [
                "src/lib.rs: `struct S`",
                "src/lib.rs: `fn f`",
                "src/lib.rs: `impl`"
            ]
        );
    }

    #[test]
    fn macro_export_anywhere_under_src_is_reported() {
        let macros = "\n#[macro_export]\nmacro_rules! leak { () => {} }\n";
        let violations = check(&[(CRATE_ROOT, "pub fn install() {}"), ("src/a/m.rs", macros)]);
        assert_eq!(violations.len(), 1, "{violations:?}");
        assert!(violations[0].starts_with("src/a/m.rs: `#[macro_export]`"));
    }

    #[test]
    fn missing_crate_root_and_unparsable_files_are_reported() {
        assert_eq!(check(&[]), ["plugin_mcp has no src/lib.rs to check"]);
        let violations = check(&[(CRATE_ROOT, "pub fn install( {}\n")]);
        assert_eq!(violations.len(), 1, "{violations:?}");
        assert!(violations[0].starts_with("src/lib.rs: does not parse as Rust"));
    }
}
