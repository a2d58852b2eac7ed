//! Reads one list out of a YAML file: the names under a top-level key, one `- name` a line.
//!
//! The conformance suite's requirement files (`requirements/<revision>.yaml`, key `client`)
//! and the project's baseline (`conformance/baseline.yaml`, key `client`) write their lists in
//! this shape and no other. Reading only it, and refusing anything else inside the list,
//! keeps a YAML parser out of the build; a file that grows another shape is an error, never a
//! silent misreading.

/// The items of the block list under the top-level `key` of `text`, in order. Comments
/// (`#` to the end of a line) and blank lines are skipped; `Ok(None)` if there is no such key.
pub(super) fn read(text: &str, key: &str) -> Result<Option<Vec<String>>, String> {
    let mut lines = text.lines().enumerate();
    let heading = format!("{key}:");
    if !lines.any(|(_, line)| uncommented(line) == heading) {
        return Ok(None);
    }
    let mut items = Vec::new();
    for (index, line) in lines {
        let content = uncommented(line);
        if content.is_empty() {
            continue;
        }
        if !line.starts_with([' ', '\t']) {
            break;
        }
        let item = content
            .strip_prefix("- ")
            .map(str::trim)
            .filter(|item| !item.is_empty() && !item.contains([':', '"', '\'', '{', '[']))
            .ok_or_else(|| {
                format!(
                    "line {}: `{key}` must list plain names, one `- name` a line; found `{content}`",
                    index + 1
                )
            })?;
        items.push(item.to_owned());
    }
    Ok(Some(items))
}

/// The line without its comment and surrounding blanks. Names never contain `#`.
fn uncommented(line: &str) -> &str {
    line.split('#').next().unwrap_or_default().trim()
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = "\
# heading
server:
  - a-server

client:
  # a group
  - initialize
  - auth/metadata-default   # why

  - tools_call
not_scored:
  - scenario: x
";

    #[test]
    fn reads_the_names_under_the_key_and_nothing_past_it() {
        assert_eq!(
            read(FILE, "client"),
            Ok(Some(vec![
                "initialize".to_owned(),
                "auth/metadata-default".to_owned(),
                "tools_call".to_owned()
            ]))
        );
        assert_eq!(read(FILE, "server"), Ok(Some(vec!["a-server".to_owned()])));
        assert_eq!(read(FILE, "clients"), Ok(None));
        assert_eq!(read("client:\n", "client"), Ok(Some(vec![])));
    }

    #[test]
    fn refuses_any_other_shape_inside_the_list() {
        assert_eq!(
            read(FILE, "not_scored"),
            Err(
                "line 12: `not_scored` must list plain names, one `- name` a line; \
                 found `- scenario: x`"
                    .to_owned()
            )
        );
        let check = read("client:\n  - tools_call:tool-add-numbers\n", "client");
        assert!(check.is_err_and(|e| e.starts_with("line 2: `client` must list plain names")));
        let nested = read("client:\n  names:\n    - a\n", "client");
        assert!(nested.is_err_and(|e| e.contains("found `names:`")));
        assert!(read("client:\n  - \"quoted\"\n", "client").is_err());
        assert!(read("client:\n  -\n", "client").is_err());
    }
}
