//! JSON, merge and strategic merge patches of a Deployment: no panic, failures are 4xx.
#![no_main]

use korral_apiserver::fuzzing;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let original = serde_json::json!({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
        "spec": {"template": {"spec": {"containers": [
            {"name": "c", "image": "nginx", "ports": [{"containerPort": 80}]}
        ]}}}
    });
    for kind in ["json", "merge", "strategic"] {
        if let Err(e) = fuzzing::apply_patch(kind, &original, data) {
            assert!((400..500).contains(&e.code), "{kind}: {e}");
        }
    }
});
