//! Smoke test: the quick API server benchmark runs end to end and reports every row.
//!
//! No timing assertions: only that each measurement ran and produced a positive figure. The
//! `korral` binary is built (debug) by the harness when it is missing.

use korral_bench::{ApiserverOptions, ROW_IDS, create_vs_baseline, run_apiserver};

#[tokio::test(flavor = "multi_thread")]
async fn quick_apiserver_run_reports_every_row() -> anyhow::Result<()> {
    let mut options = ApiserverOptions::quick();
    // Under `cargo test --workspace` the korral binary is already built with the workspace's
    // unified features; building `korral-cli` alone would resolve features differently and
    // rebuild its dependencies, so only build when it is missing.
    let built = std::env::current_exe()?
        .parent()
        .and_then(|deps| deps.parent())
        .map(|profile| profile.join(format!("korral{}", std::env::consts::EXE_SUFFIX)))
        .is_some_and(|p| p.is_file());
    options.build_korral = !built;
    let report = run_apiserver(&options).await?;
    let table = report.to_string();
    println!("{table}");
    assert_eq!(report.rows.len(), ROW_IDS.len(), "{table}");
    for id in ROW_IDS {
        let row = report
            .row(id)
            .unwrap_or_else(|| panic!("row {id} is missing:\n{table}"));
        // A streamed list's peak growth may be nil: its chunks can fit in memory the
        // allocator kept from the creates before it.
        let positive = if id == "list_peak_rss" {
            row.value >= 0.0
        } else {
            row.value > 0.0
        };
        assert!(
            row.value.is_finite() && positive,
            "row {id} ({}) has no positive figure: {}\n{table}",
            row.name,
            row.value
        );
        assert!(
            table.contains(&row.name),
            "row {id} is not printed:\n{table}"
        );
        if let Some(ratio) = row.ratio() {
            assert!(ratio > 0.0, "row {id} has ratio {ratio}");
        }
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_baseline_comparison_reports_the_ratio_of_two_binaries() -> anyhow::Result<()> {
    let korral = std::env::current_exe()?
        .parent()
        .and_then(|deps| deps.parent())
        .map(|profile| profile.join(format!("korral{}", std::env::consts::EXE_SUFFIX)))
        .filter(|p| p.is_file());
    let Some(korral) = korral else {
        eprintln!("skipping: the korral binary is not built next to this test");
        return Ok(());
    };
    let mut options = ApiserverOptions::quick();
    options.creates = 100;
    // The same binary on both sides: the ratio is about 1 and must be a positive figure.
    let row = create_vs_baseline(&korral, &korral, &options).await?;
    assert_eq!(row.id, "create_vs_baseline");
    assert!(row.value.is_finite() && row.value > 0.0, "{}", row.value);
    assert!(row.note.contains("baseline"), "{}", row.note);
    Ok(())
}
