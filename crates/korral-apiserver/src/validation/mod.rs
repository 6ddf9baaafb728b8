//! Validation of object names, labels and custom resource schemas.

pub mod cel;
pub mod names;
pub mod schema;
