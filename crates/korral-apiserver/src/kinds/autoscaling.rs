//! `autoscaling`: not served yet.

use super::KindDef;

/// The kinds of `autoscaling`.
pub(super) fn kinds() -> Vec<KindDef> {
    Vec::new()
}
