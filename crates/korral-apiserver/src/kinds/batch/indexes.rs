//! Index interval lists (`"1,3-5,7"`) as Jobs use them in `successPolicy.rules[].succeededIndexes`,
//! `status.completedIndexes` and `status.failedIndexes`: upstream's `parseIndexInterval`,
//! `validateIndexesFormat` and `validateFailedIndexesNotOverlapCompleted`.

/// One interval `x` or `x-y` of a list, both ends below `completions`, `x < y`.
fn parse_interval(interval: &str, completions: i64) -> Result<(i64, i64), String> {
    let limits: Vec<&str> = interval.split('-').collect();
    if limits.len() > 2 {
        return Err(format!(
            "the fragment {} violates the requirement that an index interval can have at most two parts separated by '-'",
            crate::validation::names::go_quote(interval)
        ));
    }
    let bound = |text: &str| -> Result<i64, String> {
        let value = parse_go_int(text).ok_or_else(|| {
            format!(
                "cannot convert string to integer for index: {}",
                crate::validation::names::go_quote(text)
            )
        })?;
        if value >= completions {
            return Err(format!(
                "too large index: {}",
                crate::validation::names::go_quote(text)
            ));
        }
        Ok(value)
    };
    let x = bound(limits[0])?;
    match limits.get(1) {
        None => Ok((x, x)),
        Some(end) => {
            let y = bound(end)?;
            if x >= y {
                return Err(format!("non-increasing order, previous: {x}, current: {y}"));
            }
            Ok((x, y))
        }
    }
}

/// Go's `strconv.Atoi`: an optional sign, then decimal digits, within 64 bits.
fn parse_go_int(text: &str) -> Option<i64> {
    let digits = text.strip_prefix(['+', '-']).unwrap_or(text);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

/// Checks an interval list (empty is fine): well-formed intervals, increasing and not touching
/// one another, every index below `completions`. Returns how many indexes it names.
pub(super) fn validate_format(indexes: &str, completions: i64) -> Result<i64, String> {
    if indexes.is_empty() {
        return Ok(0);
    }
    let mut last: Option<i64> = None;
    let mut total = 0i64;
    for interval in indexes.split(',') {
        let (x, y) = parse_interval(interval, completions)?;
        if let Some(previous) = last
            && previous >= x
        {
            return Err(format!(
                "non-increasing order, previous: {previous}, current: {x}"
            ));
        }
        total = total.saturating_add(y - x + 1);
        last = Some(y);
    }
    Ok(total)
}

/// The first index two interval lists share, as upstream's message names it (intervals that
/// do not parse are skipped: their format is reported on its own).
pub(super) fn overlap(completed: &str, failed: &str, completions: i64) -> Option<String> {
    if completed.is_empty() || failed.is_empty() {
        return None;
    }
    let completed: Vec<&str> = completed.split(',').collect();
    let failed: Vec<&str> = failed.split(',').collect();
    let (mut c, mut f) = (0, 0);
    let mut c_cur = parse_interval(completed[0], completions);
    let mut f_cur = parse_interval(failed[0], completions);
    while c < completed.len() && f < failed.len() {
        match (&c_cur, &f_cur) {
            (Err(_), _) => {
                c += 1;
                if let Some(next) = completed.get(c) {
                    c_cur = parse_interval(next, completions);
                }
            }
            (_, Err(_)) => {
                f += 1;
                if let Some(next) = failed.get(f) {
                    f_cur = parse_interval(next, completions);
                }
            }
            (Ok((cx, cy)), Ok((fx, fy))) => {
                if cx <= fy && fx <= cy {
                    return Some(format!(
                        "failedIndexes and completedIndexes overlap at index: {}",
                        (*cx).max(*fx)
                    ));
                }
                if cx <= fx {
                    c += 1;
                    if let Some(next) = completed.get(c) {
                        c_cur = parse_interval(next, completions);
                    }
                } else {
                    f += 1;
                    if let Some(next) = failed.get(f) {
                        f_cur = parse_interval(next, completions);
                    }
                }
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interval_lists_count_their_indexes() {
        for (text, completions, want) in [
            ("", 0, Ok(0)),
            ("0,2,4", 10, Ok(3)),
            ("1,3,5-9", 10, Ok(7)),
            ("0-2", 3, Ok(3)),
            (
                "invalid-format",
                5,
                Err("cannot convert string to integer for index: \"invalid\""),
            ),
            (
                "1-",
                5,
                Err("cannot convert string to integer for index: \"\""),
            ),
            ("5", 5, Err("too large index: \"5\"")),
            ("1-7", 5, Err("too large index: \"7\"")),
            (
                "3-1",
                5,
                Err("non-increasing order, previous: 3, current: 1"),
            ),
            (
                "2-2",
                5,
                Err("non-increasing order, previous: 2, current: 2"),
            ),
            (
                "1-2,2",
                5,
                Err("non-increasing order, previous: 2, current: 2"),
            ),
            (
                "3,1",
                5,
                Err("non-increasing order, previous: 3, current: 1"),
            ),
            (
                "1-2-3",
                5,
                Err(
                    "the fragment \"1-2-3\" violates the requirement that an index interval can have at most two parts separated by '-'",
                ),
            ),
        ] {
            assert_eq!(
                validate_format(text, completions),
                want.map_err(str::to_string),
                "{text}"
            );
        }
    }

    #[test]
    fn overlapping_lists_name_the_first_shared_index() {
        assert_eq!(overlap("0-2", "3-4", 5), None);
        assert_eq!(
            overlap("0-2,5", "1", 6).as_deref(),
            Some("failedIndexes and completedIndexes overlap at index: 1")
        );
        assert_eq!(
            overlap("1,4-6", "3-5", 7).as_deref(),
            Some("failedIndexes and completedIndexes overlap at index: 4")
        );
        assert_eq!(
            overlap("x,1", "1", 5).as_deref(),
            Some("failedIndexes and completedIndexes overlap at index: 1")
        );
        assert_eq!(overlap("", "1", 5), None);
    }
}
