//! `policy`: not served yet.

use super::KindDef;

/// The kinds of `policy`.
pub(super) fn kinds() -> Vec<KindDef> {
    Vec::new()
}
