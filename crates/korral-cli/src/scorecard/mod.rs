//! `korral scorecard`: operator-sdk's scorecard for Korral projects. The `basic` suite
//! (`basic-check-spec`, run against a cluster) and the `olm` suite (bundle validation, CRD
//! validation and resources, spec and status descriptors) check a bundle and report as
//! operator-sdk does (`TestList` JSON or text).

mod bundle;
mod checks;
mod live;
mod report;

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, bail};

use crate::project::find_root;
use bundle::Bundle;
use checks::Descriptors;
use report::{TestList, TestResult};

/// Output formats.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Output {
    /// A readable report.
    Text,
    /// operator-sdk's `TestList` (scorecard.operatorframework.io/v1alpha3).
    Json,
}

/// Options of `korral scorecard`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The bundle directory (default: `bundle` of the project).
    pub bundle_dir: Option<PathBuf>,
    /// Which tests to run, as `key=value` labels joined by commas (`suite=basic`, `suite=olm`,
    /// `test=olm-spec-descriptors-test`); default: all.
    #[arg(long, short = 'l')]
    pub selector: Option<String>,
    /// The report format.
    #[arg(long, short = 'o', value_enum, default_value = "text")]
    pub output: Output,
    /// The kubeconfig (default: `.korral/kubeconfig` of the project, written by `korral up`,
    /// else `KUBECONFIG` or `~/.kube/config`).
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    /// The namespace the example custom resources are created in (default: the kubeconfig's).
    #[arg(long, short = 'n')]
    pub namespace: Option<String>,
    /// How long the cluster tests may take (`30s`, `2m`, `500ms`).
    #[arg(long, short = 'w', default_value = "30s", value_parser = parse_duration)]
    pub wait_time: Duration,
}

/// Parses `30s`, `2m`, `500ms`, `1h` or plain seconds.
fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let n: u64 = number
        .parse()
        .map_err(|_| format!("{text:?} is not a duration (e.g. 30s, 2m, 500ms)"))?;
    match unit {
        "" | "s" => Ok(Duration::from_secs(n)),
        "ms" => Ok(Duration::from_millis(n)),
        "m" => Ok(Duration::from_secs(n * 60)),
        "h" => Ok(Duration::from_secs(n * 3600)),
        _ => Err(format!(
            "{text:?} has an unknown unit {unit:?} (use ms, s, m or h)"
        )),
    }
}

/// The tests korral knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TestId {
    BasicCheckSpec,
    OlmBundleValidation,
    OlmCrdsHaveValidation,
    OlmCrdsHaveResources,
    OlmSpecDescriptors,
    OlmStatusDescriptors,
}

/// One test: which it is, its suite and its `test` label.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct TestDef {
    id: TestId,
    suite: &'static str,
    label: &'static str,
}

/// The tests, in run order.
const TESTS: [TestDef; 6] = [
    TestDef {
        id: TestId::BasicCheckSpec,
        suite: "basic",
        label: "basic-check-spec-test",
    },
    TestDef {
        id: TestId::OlmBundleValidation,
        suite: "olm",
        label: "olm-bundle-validation-test",
    },
    TestDef {
        id: TestId::OlmCrdsHaveValidation,
        suite: "olm",
        label: "olm-crds-have-validation-test",
    },
    TestDef {
        id: TestId::OlmCrdsHaveResources,
        suite: "olm",
        label: "olm-crds-have-resources-test",
    },
    TestDef {
        id: TestId::OlmSpecDescriptors,
        suite: "olm",
        label: "olm-spec-descriptors-test",
    },
    TestDef {
        id: TestId::OlmStatusDescriptors,
        suite: "olm",
        label: "olm-status-descriptors-test",
    },
];

/// The tests a selector picks; unknown keys and selectors matching nothing are errors.
fn select(selector: Option<&str>) -> anyhow::Result<Vec<TestDef>> {
    let Some(selector) = selector.map(str::trim).filter(|s| !s.is_empty()) else {
        return Ok(TESTS.to_vec());
    };
    let mut chosen = TESTS.to_vec();
    for term in selector.split(',') {
        let Some((key, value)) = term.split_once('=') else {
            bail!("selector {term:?} is not key=value (e.g. suite=basic or suite=olm)");
        };
        let (key, value) = (key.trim(), value.trim().trim_start_matches('='));
        match key {
            "suite" => chosen.retain(|t| t.suite == value),
            "test" => chosen.retain(|t| t.label == value),
            _ => bail!("unknown selector key {key:?} in {selector:?} (use suite or test)"),
        }
        if chosen.is_empty() {
            let known: Vec<&str> = match key {
                "suite" => vec!["basic", "olm"],
                _ => TESTS.iter().map(|t| t.label).collect(),
            };
            bail!(
                "unknown selector {term:?}: no test has {key}={value} (known: {})",
                known.join(", ")
            );
        }
    }
    Ok(chosen)
}

/// Runs the test `def` on `bundle`; `cluster` is connected only when a selected test needs it.
async fn run_test(
    def: TestDef,
    bundle: &Bundle,
    cluster: Option<&anyhow::Result<(crate::cluster::Cluster, String)>>,
    wait: Duration,
) -> TestResult {
    let examples = bundle.examples();
    let with_examples = |name: &str, f: &dyn Fn(&[serde_json::Value]) -> TestResult| match &examples
    {
        Ok(crs) => f(crs),
        Err(err) => {
            let mut result = TestResult::pass(name);
            result.error(err.clone());
            result
        }
    };
    match def.id {
        TestId::BasicCheckSpec => match cluster {
            Some(Ok((cluster, namespace))) => {
                live::basic_check_spec(bundle, &cluster.client, namespace, wait).await
            }
            Some(Err(err)) => {
                let mut result = TestResult::pass("basic-check-spec");
                result.error(format!("{err:#}"));
                result
            }
            None => {
                let mut result = TestResult::pass("basic-check-spec");
                result.error("no cluster was connected");
                result
            }
        },
        TestId::OlmBundleValidation => checks::bundle_validation(bundle),
        TestId::OlmCrdsHaveValidation => with_examples("olm-crds-have-validation", &|crs| {
            checks::crds_have_validation(&bundle.csv, &bundle.crds, crs)
        }),
        TestId::OlmCrdsHaveResources => checks::crds_have_resources(&bundle.csv),
        TestId::OlmSpecDescriptors => with_examples("olm-spec-descriptors", &|crs| {
            checks::descriptors(&bundle.csv, crs, Descriptors::Spec)
        }),
        TestId::OlmStatusDescriptors => with_examples("olm-status-descriptors", &|crs| {
            checks::descriptors(&bundle.csv, crs, Descriptors::Status)
        }),
    }
}

/// Connects to the cluster `korral install` would use, and picks the namespace.
async fn connect(
    root: &Path,
    kubeconfig: Option<&Path>,
    namespace: Option<&str>,
) -> anyhow::Result<(crate::cluster::Cluster, String)> {
    let cluster = crate::cluster::connect(root, kubeconfig).await?;
    tracing::info!(cluster = %cluster.describe(), "scorecard cluster");
    let namespace = namespace
        .map(str::to_owned)
        .unwrap_or_else(|| cluster.client.default_namespace().to_owned());
    Ok((cluster, namespace))
}

/// Runs `korral scorecard`: prints the report; fails when a test did not pass.
pub async fn run(args: Args) -> anyhow::Result<()> {
    let tests = select(args.selector.as_deref())?;
    let project = find_root(Path::new(".")).ok();
    let dir = match (&args.bundle_dir, &project) {
        (Some(dir), _) => dir.clone(),
        (None, Some(root)) => root.join("bundle"),
        (None, None) => bail!(
            "no bundle directory given and no project here (no PROJECT file in this directory or a parent)"
        ),
    };
    let bundle = Bundle::load(&dir)?;
    tracing::info!(bundle = %dir.display(), csv = bundle.csv_name(), "scorecard bundle");
    let cluster = if tests.iter().any(|t| t.suite == "basic") {
        let root = project
            .clone()
            .or_else(|| dir.parent().map(Path::to_path_buf))
            .unwrap_or_else(|| PathBuf::from("."));
        Some(connect(&root, args.kubeconfig.as_deref(), args.namespace.as_deref()).await)
    } else {
        None
    };
    let mut results = Vec::new();
    for def in tests {
        let result = run_test(def, &bundle, cluster.as_ref(), args.wait_time).await;
        results.push((def.suite, def.label, result));
    }
    let list = TestList::new(results);
    match args.output {
        Output::Json => println!("{}", list.to_json().context("writing the JSON report")?),
        Output::Text => print!("{}", list.to_text()),
    }
    let not_passed: Vec<String> = list
        .not_passed()
        .iter()
        .map(|r| format!("{} ({:?})", r.name, r.state).to_lowercase())
        .collect();
    if !not_passed.is_empty() {
        bail!(
            "scorecard: {} of {} test(s) did not pass: {}",
            not_passed.len(),
            list.items.len(),
            not_passed.join(", ")
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selectors_pick_suites_and_tests() -> anyhow::Result<()> {
        assert_eq!(select(None)?.len(), 6);
        assert_eq!(select(Some("suite=basic"))?, vec![TESTS[0]]);
        assert_eq!(select(Some("suite=olm"))?.len(), 5);
        assert_eq!(
            select(Some("suite=olm,test=olm-spec-descriptors-test"))?,
            vec![TESTS[4]]
        );
        Ok(())
    }

    #[test]
    fn unknown_selectors_are_named() {
        let err = |s: &str| {
            select(Some(s))
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default()
        };
        assert!(
            err("suite=kuttl").contains("suite=kuttl"),
            "{}",
            err("suite=kuttl")
        );
        assert!(
            err("color=red").contains("\"color\""),
            "{}",
            err("color=red")
        );
        assert!(err("olm").contains("key=value"), "{}", err("olm"));
    }

    #[test]
    fn durations_parse_like_operator_sdks_wait_time() {
        assert_eq!(parse_duration("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("7"), Ok(Duration::from_secs(7)));
        assert!(parse_duration("3 days").is_err());
        assert!(parse_duration("s").is_err());
    }
}
