//! Scorecard results as operator-sdk reports them: `TestList` of
//! `scorecard.operatorframework.io/v1alpha3` for `--output json`, a readable text report otherwise.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

/// The API version of operator-sdk's scorecard output.
pub const API_VERSION: &str = "scorecard.operatorframework.io/v1alpha3";

/// The `image` recorded in each test's spec: the tests are built into `korral`, not an image.
pub const IMAGE: &str = "korral-scorecard:built-in";

/// The final state of a test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum State {
    /// Every check held.
    Pass,
    /// A check did not hold.
    Fail,
    /// The test could not run (e.g. the cluster was unreachable).
    Error,
}

impl State {
    fn as_str(self) -> &'static str {
        match self {
            State::Pass => "pass",
            State::Fail => "fail",
            State::Error => "error",
        }
    }
}

/// The result of one test (operator-sdk's `TestResult`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TestResult {
    /// The test's name (`olm-spec-descriptors`).
    pub name: String,
    /// What the test looked at, line by line.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub log: String,
    /// The state.
    pub state: State,
    /// What failed.
    pub errors: Vec<String>,
    /// How to improve.
    pub suggestions: Vec<String>,
}

impl TestResult {
    /// A passing result without errors or suggestions.
    pub fn pass(name: &str) -> Self {
        Self {
            name: name.to_owned(),
            log: String::new(),
            state: State::Pass,
            errors: Vec::new(),
            suggestions: Vec::new(),
        }
    }

    /// Records an error and fails the test (an `error` state stays `error`).
    pub fn fail(&mut self, error: impl Into<String>) {
        self.errors.push(error.into());
        if self.state == State::Pass {
            self.state = State::Fail;
        }
    }

    /// Records an error that kept the test from running.
    pub fn error(&mut self, error: impl Into<String>) {
        self.errors.push(error.into());
        self.state = State::Error;
    }

    /// Records a suggestion (the state does not change).
    pub fn suggest(&mut self, suggestion: impl Into<String>) {
        self.suggestions.push(suggestion.into());
    }

    /// Appends a line to the log.
    pub fn log_line(&mut self, line: impl AsRef<str>) {
        self.log.push_str(line.as_ref());
        self.log.push('\n');
    }
}

/// A test's spec: the image and entrypoint operator-sdk would run, and its labels.
#[derive(Debug, Clone, Serialize)]
pub struct TestSpec {
    /// See [`IMAGE`].
    pub image: String,
    /// `[korral-scorecard, <test>]`.
    pub entrypoint: Vec<String>,
    /// `suite` and `test`.
    pub labels: BTreeMap<String, String>,
}

/// A test's status.
#[derive(Debug, Clone, Serialize)]
pub struct TestStatus {
    /// One result per test.
    pub results: Vec<TestResult>,
}

/// One test run.
#[derive(Debug, Clone, Serialize)]
pub struct Test {
    /// `Test`.
    pub kind: &'static str,
    /// [`API_VERSION`].
    #[serde(rename = "apiVersion")]
    pub api_version: &'static str,
    /// What ran.
    pub spec: TestSpec,
    /// How it went.
    pub status: TestStatus,
}

/// All tests run.
#[derive(Debug, Clone, Serialize)]
pub struct TestList {
    /// `TestList`.
    pub kind: &'static str,
    /// [`API_VERSION`].
    #[serde(rename = "apiVersion")]
    pub api_version: &'static str,
    /// The tests, in run order.
    pub items: Vec<Test>,
}

impl TestList {
    /// A list of `(suite, label, result)` tests.
    pub fn new(tests: Vec<(&str, &str, TestResult)>) -> Self {
        let items = tests
            .into_iter()
            .map(|(suite, label, result)| Test {
                kind: "Test",
                api_version: API_VERSION,
                spec: TestSpec {
                    image: IMAGE.to_owned(),
                    entrypoint: vec!["korral-scorecard".to_owned(), result.name.clone()],
                    labels: BTreeMap::from([
                        ("suite".to_owned(), suite.to_owned()),
                        ("test".to_owned(), label.to_owned()),
                    ]),
                },
                status: TestStatus {
                    results: vec![result],
                },
            })
            .collect();
        Self {
            kind: "TestList",
            api_version: API_VERSION,
            items,
        }
    }

    /// The results that did not pass.
    pub fn not_passed(&self) -> Vec<&TestResult> {
        self.items
            .iter()
            .flat_map(|t| &t.status.results)
            .filter(|r| r.state != State::Pass)
            .collect()
    }

    /// The JSON report (pretty printed).
    pub fn to_json(&self) -> serde_json::Result<String> {
        serde_json::to_string_pretty(self)
    }

    /// The text report: one section per test, as operator-sdk prints them, then a summary.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        for test in &self.items {
            let _ = writeln!(out, "{}", "-".repeat(80));
            let _ = writeln!(out, "Image:      {}", test.spec.image);
            let _ = writeln!(out, "Entrypoint: [{}]", test.spec.entrypoint.join(" "));
            out.push_str("Labels:\n");
            for (key, value) in &test.spec.labels {
                let _ = writeln!(out, "\t{key:?}:{value:?}");
            }
            out.push_str("Results:\n");
            for result in &test.status.results {
                let _ = writeln!(out, "\tName: {}", result.name);
                let _ = writeln!(out, "\tState: {}", result.state.as_str());
                for (title, lines) in [
                    ("Suggestions", &result.suggestions),
                    ("Errors", &result.errors),
                ] {
                    if !lines.is_empty() {
                        let _ = writeln!(out, "\t{title}:");
                        for line in lines {
                            let _ = writeln!(out, "\t\t{line}");
                        }
                    }
                }
                if !result.log.is_empty() {
                    out.push_str("\tLog:\n");
                    for line in result.log.lines() {
                        let _ = writeln!(out, "\t\t{line}");
                    }
                }
                out.push('\n');
            }
        }
        let total = self.items.len();
        let failed = self.not_passed().len();
        let _ = writeln!(out, "{}", "-".repeat(80));
        let _ = writeln!(
            out,
            "{} of {total} test(s) passed, {failed} did not",
            total - failed
        );
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list() -> TestList {
        let mut failed = TestResult::pass("olm-spec-descriptors");
        failed.fail("spec field `size` has no specDescriptor");
        failed.suggest("Add a spec descriptor for size");
        TestList::new(vec![
            (
                "basic",
                "basic-check-spec-test",
                TestResult::pass("basic-check-spec"),
            ),
            ("olm", "olm-spec-descriptors-test", failed),
        ])
    }

    #[test]
    fn json_has_operator_sdks_shape() -> anyhow::Result<()> {
        let value: serde_json::Value = serde_json::from_str(&list().to_json()?)?;
        assert_eq!(value["apiVersion"], API_VERSION);
        assert_eq!(value["kind"], "TestList");
        let item = &value["items"][1];
        assert_eq!(item["kind"], "Test");
        assert_eq!(item["apiVersion"], API_VERSION);
        assert_eq!(item["spec"]["labels"]["suite"], "olm");
        assert_eq!(item["spec"]["labels"]["test"], "olm-spec-descriptors-test");
        let result = &item["status"]["results"][0];
        assert_eq!(result["name"], "olm-spec-descriptors");
        assert_eq!(result["state"], "fail");
        assert_eq!(
            result["errors"][0],
            "spec field `size` has no specDescriptor"
        );
        assert_eq!(
            value["items"][0]["status"]["results"][0]["errors"],
            serde_json::json!([])
        );
        Ok(())
    }

    #[test]
    fn text_has_a_section_per_test_and_a_summary() {
        let text = list().to_text();
        assert_eq!(text.matches(&"-".repeat(80)).count(), 3, "{text}");
        assert!(
            text.contains("\tName: olm-spec-descriptors\n\tState: fail\n"),
            "{text}"
        );
        assert!(
            text.contains("\tErrors:\n\t\tspec field `size` has no specDescriptor\n"),
            "{text}"
        );
        assert!(
            text.contains("\t\"test\":\"basic-check-spec-test\"\n"),
            "{text}"
        );
        assert!(
            text.ends_with("1 of 2 test(s) passed, 1 did not\n"),
            "{text}"
        );
    }

    #[test]
    fn an_error_state_is_not_downgraded_by_a_failure() {
        let mut result = TestResult::pass("x");
        result.error("cluster unreachable");
        result.fail("also this");
        assert_eq!(result.state, State::Error);
        assert_eq!(result.errors.len(), 2);
    }
}
