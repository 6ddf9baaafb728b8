//! Smoke test: the quick runtime comparison runs end to end in this process (no child
//! processes) and both controllers converge in both workloads, with and without injected
//! latency. No timing or memory assertions.

use korral_bench::runtime::Workload;
use korral_bench::{RuntimeOptions, run_runtime};

#[tokio::test(flavor = "multi_thread")]
async fn quick_runtime_run_converges_for_both_controllers() -> anyhow::Result<()> {
    let mut options = RuntimeOptions::new(true);
    options.counts = vec![20];
    options.latency_count = 20;
    options.latencies_ms = vec![0, 2];
    options.isolate = false;
    let report = run_runtime(&options).await?;
    println!("{report}");
    let scenarios: Vec<String> = report.pairs.iter().map(|p| p.scenario.to_string()).collect();
    assert_eq!(
        scenarios,
        [
            "status-patch N=20 +0ms",
            "status-patch N=20 +2ms",
            "helloapp N=20 +0ms",
            "helloapp N=20 +2ms",
        ]
    );
    for pair in &report.pairs {
        for m in [pair.korral, pair.kube] {
            assert_eq!(m.n, pair.scenario.n);
            assert!(m.converge.as_nanos() > 0);
            // Every object was reconciled at least once, and each implementation's client
            // listed and watched its types.
            assert!(m.reconciles >= m.n as u64, "{}: {m:?}", pair.scenario);
            assert!(m.requests.watches >= 1 && m.requests.reads >= 1, "{m:?}");
        }
        if pair.scenario.workload == Workload::HelloApp {
            // Each Hello's Deployment was written (created or applied) at least once.
            assert!(pair.korral.requests.writes >= pair.scenario.n as u64);
            assert!(pair.kube.requests.writes >= pair.scenario.n as u64);
        }
    }
    Ok(())
}
