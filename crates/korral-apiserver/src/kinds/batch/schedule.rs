//! CronJob schedules, parsed as upstream parses them (`robfig/cron/v3`'s standard parser:
//! five fields, names for months and weekdays, `@` descriptors and `@every <duration>`, an
//! optional `TZ=`/`CRON_TZ=` prefix), with its error messages.

/// The range of one schedule field and the names it accepts.
struct Bounds {
    min: u64,
    max: u64,
    names: &'static [&'static str],
}

const MINUTES: Bounds = Bounds {
    min: 0,
    max: 59,
    names: &[],
};
const HOURS: Bounds = Bounds {
    min: 0,
    max: 23,
    names: &[],
};
const DAYS_OF_MONTH: Bounds = Bounds {
    min: 1,
    max: 31,
    names: &[],
};
const MONTHS: Bounds = Bounds {
    min: 1,
    max: 12,
    names: &[
        "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
    ],
};
const DAYS_OF_WEEK: Bounds = Bounds {
    min: 0,
    max: 6,
    names: &["sun", "mon", "tue", "wed", "thu", "fri", "sat"],
};

/// Checks a schedule; the error is upstream's message.
pub(crate) fn parse(schedule: &str) -> Result<(), String> {
    if schedule.is_empty() {
        return Err("empty spec string".to_string());
    }
    let mut spec = schedule;
    if spec.starts_with("TZ=") || spec.starts_with("CRON_TZ=") {
        let (zone_part, rest) = spec
            .split_once(' ')
            .ok_or_else(|| format!("provided bad location {spec}: unknown time zone {spec}"))?;
        let zone = zone_part.split_once('=').map_or("", |(_, z)| z);
        check_zone(zone).map_err(|e| format!("provided bad location {zone}: {e}"))?;
        spec = rest.trim();
    }
    if spec.starts_with('@') {
        return descriptor(spec);
    }
    let fields: Vec<&str> = spec.split_whitespace().collect();
    if fields.len() != 5 {
        return Err(format!(
            "expected exactly 5 fields, found {}: [{}]",
            fields.len(),
            fields.join(" ")
        ));
    }
    for (field, bounds) in
        fields
            .iter()
            .zip([&MINUTES, &HOURS, &DAYS_OF_MONTH, &MONTHS, &DAYS_OF_WEEK])
    {
        for expr in field.split(',').filter(|e| !e.is_empty()) {
            range(expr, bounds)?;
        }
    }
    Ok(())
}

/// Whether `zone` names a time zone upstream's `time.LoadLocation` knows; its error otherwise.
pub(crate) fn check_zone(zone: &str) -> Result<(), String> {
    if zone.is_empty() || zone == "UTC" || zone == "Local" {
        return Ok(());
    }
    jiff::tz::TimeZone::get(zone)
        .map(|_| ())
        .map_err(|_| format!("unknown time zone {zone}"))
}

/// `@yearly` … `@hourly` and `@every <duration>`.
fn descriptor(spec: &str) -> Result<(), String> {
    match spec {
        "@yearly" | "@annually" | "@monthly" | "@weekly" | "@daily" | "@midnight" | "@hourly" => {
            Ok(())
        }
        _ => match spec.strip_prefix("@every ") {
            Some(duration) => {
                go_duration(duration).map_err(|e| format!("failed to parse duration {spec}: {e}"))
            }
            None => Err(format!("unrecognized descriptor: {spec}")),
        },
    }
}

/// One `low[-high][/step]` expression of a field.
fn range(expr: &str, bounds: &Bounds) -> Result<(), String> {
    let range_and_step: Vec<&str> = expr.split('/').collect();
    let low_and_high: Vec<&str> = range_and_step[0].split('-').collect();
    let (start, mut end) = if low_and_high[0] == "*" || low_and_high[0] == "?" {
        (bounds.min, bounds.max)
    } else {
        let start = int_or_name(low_and_high[0], bounds)?;
        let end = match low_and_high.len() {
            1 => start,
            2 => int_or_name(low_and_high[1], bounds)?,
            _ => return Err(format!("too many hyphens: {expr}")),
        };
        (start, end)
    };
    let step = match range_and_step.len() {
        1 => 1,
        2 => {
            let step = int(range_and_step[1])?;
            if low_and_high.len() == 1 {
                end = bounds.max;
            }
            step
        }
        _ => return Err(format!("too many slashes: {expr}")),
    };
    if start < bounds.min {
        return Err(format!(
            "beginning of range ({start}) below minimum ({}): {expr}",
            bounds.min
        ));
    }
    if end > bounds.max {
        return Err(format!(
            "end of range ({end}) above maximum ({}): {expr}",
            bounds.max
        ));
    }
    if start > end {
        return Err(format!(
            "beginning of range ({start}) beyond end of range ({end}): {expr}"
        ));
    }
    if step == 0 {
        return Err(format!("step of range should be a positive number: {expr}"));
    }
    Ok(())
}

fn int_or_name(expr: &str, bounds: &Bounds) -> Result<u64, String> {
    let lower = expr.to_ascii_lowercase();
    match bounds.names.iter().position(|n| *n == lower) {
        Some(i) => Ok(u64::try_from(i).unwrap_or(0) + bounds.min),
        None => int(expr),
    }
}

/// Go's `strconv.Atoi` as the parser uses it, negative numbers refused.
fn int(expr: &str) -> Result<u64, String> {
    let digits = expr.strip_prefix(['+', '-']).unwrap_or(expr);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!(
            "failed to parse int from {expr}: strconv.Atoi: parsing {expr:?}: invalid syntax"
        ));
    }
    let Ok(num) = expr.parse::<i64>() else {
        return Err(format!(
            "failed to parse int from {expr}: strconv.Atoi: parsing {expr:?}: value out of range"
        ));
    };
    if num < 0 {
        return Err(format!("negative number ({num}) not allowed: {expr}"));
    }
    Ok(num.unsigned_abs())
}

/// Go's `time.ParseDuration` syntax check, with its error messages.
fn go_duration(text: &str) -> Result<(), String> {
    let invalid = || format!("time: invalid duration {text:?}");
    let mut s = text.strip_prefix(['+', '-']).unwrap_or(text);
    if s == "0" {
        return Ok(());
    }
    if s.is_empty() {
        return Err(invalid());
    }
    while !s.is_empty() {
        let number_end = s
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(s.len());
        let number = &s[..number_end];
        if number.is_empty() || number == "." || number.matches('.').count() > 1 {
            return Err(invalid());
        }
        s = &s[number_end..];
        let unit_end = s
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(s.len());
        let unit = &s[..unit_end];
        if unit.is_empty() {
            return Err(format!("time: missing unit in duration {text:?}"));
        }
        if !["ns", "us", "µs", "μs", "ms", "s", "m", "h"].contains(&unit) {
            return Err(format!("time: unknown unit {unit:?} in duration {text:?}"));
        }
        s = &s[unit_end..];
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn valid_schedules() {
        for s in [
            "*/5 * * * *",
            "0 0 * * *",
            "15,45 8-18 * JAN-mar mon-FRI",
            "0 0 1 */2 ?",
            "@hourly",
            "@every 1h30m",
            "TZ=UTC 0 0 * * *",
            "5/15 * * * *",
        ] {
            assert_eq!(parse(s), Ok(()), "{s}");
        }
    }

    #[test]
    fn errors_are_upstreams() {
        for (s, e) in [
            (
                "not a schedule",
                "expected exactly 5 fields, found 3: [not a schedule]",
            ),
            ("61 * * * *", "end of range (61) above maximum (59): 61"),
            ("* * 0 * *", "beginning of range (0) below minimum (1): 0"),
            (
                "5-1 * * * *",
                "beginning of range (5) beyond end of range (1): 5-1",
            ),
            (
                "*/0 * * * *",
                "step of range should be a positive number: */0",
            ),
            (
                "a * * * *",
                "failed to parse int from a: strconv.Atoi: parsing \"a\": invalid syntax",
            ),
            ("1-2-3 * * * *", "too many hyphens: 1-2-3"),
            ("1/2/3 * * * *", "too many slashes: 1/2/3"),
            ("@sometimes", "unrecognized descriptor: @sometimes"),
            (
                "@every 5x",
                "failed to parse duration @every 5x: time: unknown unit \"x\" in duration \"5x\"",
            ),
            (
                "TZ=Mars/Olympus 0 0 * * *",
                "provided bad location Mars/Olympus: unknown time zone Mars/Olympus",
            ),
        ] {
            assert_eq!(parse(s), Err(e.to_string()), "{s}");
        }
    }
}
