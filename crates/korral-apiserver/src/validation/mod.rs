//! Validation of object names, labels and custom resource schemas.

pub mod cel;
pub mod duplicates;
pub(crate) mod enums;
pub mod names;
pub(crate) mod network;
pub mod podspec;
pub mod ports;
pub mod schema;
pub(crate) mod selectors;
