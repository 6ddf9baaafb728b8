//! The Kubernetes protobuf decoder: no panic on any bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = korral_apiserver::protobuf::decode_object(data);
});
