//! Smoke test: the quick runtime comparison runs end to end in this process (no child
//! processes) and both controllers converge. No timing or memory assertions.

use korral_bench::{RuntimeOptions, run_runtime};

#[tokio::test(flavor = "multi_thread")]
async fn quick_runtime_run_converges_for_both_controllers() -> anyhow::Result<()> {
    let mut options = RuntimeOptions::new(true);
    options.counts = vec![50];
    options.isolate = false;
    let report = run_runtime(&options).await?;
    println!("{report}");
    assert_eq!(report.pairs.len(), 1);
    let pair = report.pairs[0];
    assert_eq!(pair.korral.n, 50);
    assert_eq!(pair.kube.n, 50);
    assert!(pair.korral.converge.as_nanos() > 0 && pair.kube.converge.as_nanos() > 0);
    Ok(())
}
