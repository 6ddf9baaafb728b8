//! The Kubernetes protobuf decoder: no panic on any bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    korral_apiserver::fuzzing::decode_protobuf(data);
});
