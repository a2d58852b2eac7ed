//! Which characters server text may show as they are, and which a tool name may hold.
//!
//! The decision is made from Unicode properties (ICU4X's compiled Unicode data), never from a
//! list of examples: a list misses whatever it does not name, and a review found soft hyphens,
//! variation selectors, Hangul fillers and interlinear annotations passing one. A character is
//! hidden when its General_Category is Cc (controls, which a terminal acts on), Cf (format:
//! bidirectional controls, zero-width characters, tags, the soft hyphen, interlinear
//! annotations), Zl or Zp (line and paragraph separators, a line break to some readers and not
//! to others), or when it is a Default_Ignorable_Code_Point or a Variation_Selector (what a
//! renderer draws as nothing; 71 variation selectors can carry a whole instruction behind a
//! short visible sentence). Ignorable code points not yet assigned are hidden too, so
//! characters a later Unicode adds there cannot slip through.
//!
//! Every other space (General_Category Zs other than U+0020: no-break, en, em, ideographic...)
//! becomes an ordinary space. Removing them would join words; keeping them would let text read
//! differently from how it looks (two names that look the same, a secret that looks split by a
//! space). So the only whitespace cleaned text holds is space, newline and tab.

use icu_properties::props::{
    DefaultIgnorableCodePoint, GeneralCategory, GeneralCategoryGroup, VariationSelector,
};
use icu_properties::{CodePointMapData, CodePointSetData};

/// The general categories whose characters are never shown: Cc, Cf, Zl and Zp.
const HIDDEN_CATEGORIES: GeneralCategoryGroup = GeneralCategoryGroup::Control
    .union(GeneralCategoryGroup::Format)
    .union(GeneralCategoryGroup::LineSeparator)
    .union(GeneralCategoryGroup::ParagraphSeparator);

/// What cleaned text keeps of `c` (outside escape sequences, which cleaning removes whole):
/// `c` itself, an ordinary space for any other space, or nothing.
pub(crate) fn shown(c: char) -> Option<char> {
    if matches!(c, ' '..='~' | '\n' | '\t') {
        return Some(c);
    }
    let category = category(c);
    if is_hidden(c, category) {
        None
    } else if category == GeneralCategory::SpaceSeparator {
        Some(' ')
    } else {
        Some(c)
    }
}

/// Whether `c` may be in a tool name. The MCP specification (2025-11-25, Tools, "Tool
/// Names"): "The following SHOULD be the only allowed characters: uppercase and lowercase
/// ASCII letters (A-Z, a-z), digits (0-9), underscore (_), hyphen (-), and dot (.)". A model
/// types a name back exactly, and a Host shows it to a person: in this set every name is
/// what it looks like.
pub(crate) fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')
}

fn category(c: char) -> GeneralCategory {
    CodePointMapData::<GeneralCategory>::new().get(c)
}

fn is_hidden(c: char, category: GeneralCategory) -> bool {
    HIDDEN_CATEGORIES.contains(category)
        || CodePointSetData::new::<DefaultIgnorableCodePoint>().contains(c)
        // Today every variation selector is also default-ignorable; named on its own because
        // they are the characters that carry hidden text.
        || CodePointSetData::new::<VariationSelector>().contains(c)
}
