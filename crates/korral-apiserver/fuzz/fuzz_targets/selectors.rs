//! Label and field selector parsers: no panic, errors are 400.
#![no_main]

use korral_apiserver::fuzzing;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    let (label, field) = fuzzing::parse_selectors(text);
    assert!(label.is_none_or(|c| c == 400), "{label:?}");
    assert!(field.is_none_or(|c| c == 400), "{field:?}");
});
