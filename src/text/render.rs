//! [`Render`]: how a typed error of a layer below the Pack's edge becomes text, once, where it
//! leaves. The trait is here, at the bottom, so a layer can say how its errors read without
//! importing the edge that shows them.

use super::{Scrubber, Shown};

/// A typed error of a layer below the edge, as it may be shown: what others said in it
/// scrubbed by `scrubber`, cleaned and cut.
pub(crate) trait Render {
    fn render(&self, scrubber: &Scrubber) -> Shown;
}
