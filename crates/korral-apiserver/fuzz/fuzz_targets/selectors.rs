//! Label and field selector parsers: no panic, errors are 400.
#![no_main]

use korral_apiserver::selector::{FieldSelector, LabelSelector};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    if let Err(e) = LabelSelector::parse(text) {
        assert_eq!(e.code, 400);
    }
    if let Err(e) = FieldSelector::parse(text) {
        assert_eq!(e.code, 400);
    }
});
