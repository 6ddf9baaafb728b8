//! `korral-bench`: benchmarks for Korral.
//!
//! `korral-bench apiserver` measures the embedded API server run as the `korral apiserver`
//! process: startup time, create throughput (in-memory and durable, 1 and many clients), full-list
//! latency, watch delivery latency and resident memory per stored object, each against its
//! target. `korral-bench runtime` compares a Korral controller with a kube-runtime one
//! (time to converge and memory per cached object). The logic lives here so tests can run it in quick mode:
//!
//! ```no_run
//! # async fn example() -> anyhow::Result<()> {
//! let report = korral_bench::run_apiserver(&korral_bench::ApiserverOptions::quick()).await?;
//! println!("{report}");
//! # Ok(())
//! # }
//! ```

pub mod apiserver;
pub mod probe;
pub mod process;
pub mod report;
pub mod runtime;
pub mod stats;

pub use apiserver::{ApiserverOptions, ROW_IDS, create_vs_baseline, run_apiserver};
pub use report::{Goal, Report, Row};
pub use runtime::{RuntimeOptions, RuntimeReport, run_runtime};
