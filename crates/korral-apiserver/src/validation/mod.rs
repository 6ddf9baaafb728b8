//! Validation of object names, labels and custom resource schemas.

pub mod names;
pub mod schema;
