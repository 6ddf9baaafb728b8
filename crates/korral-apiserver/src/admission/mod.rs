//! Admission beyond the built-in plugins: webhook URLs and CEL for admission expressions.

pub(crate) mod cel;
pub(crate) mod url;
