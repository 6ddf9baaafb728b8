//! CronJob schedules, parsed as upstream parses them (`robfig/cron/v3`'s standard parser:
//! five fields, names for months and weekdays, `@` descriptors and `@every <duration>`, an
//! optional `TZ=`/`CRON_TZ=` prefix), with its error messages; and evaluated as its
//! `SpecSchedule.Next` does (day of month and day of week both restrict when neither starts
//! with `*`, otherwise either matches), for the simulated CronJob controller.

use jiff::tz::TimeZone;
use jiff::{Timestamp, ToSpan, Zoned};

/// A compiled schedule: when it fires.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Schedule {
    /// The `TZ=`/`CRON_TZ=` zone of the schedule text, if any.
    pub(crate) zone: Option<String>,
    /// The firing rule.
    rule: Rule,
}

/// How a schedule fires.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Rule {
    /// The five fields as bit sets (bit *n* set: value *n* matches), and whether the day of
    /// month and day of week fields started with `*` or `?`.
    Fields {
        minute: u64,
        hour: u64,
        dom: u64,
        month: u64,
        dow: u64,
        dom_star: bool,
        dow_star: bool,
    },
    /// `@every <duration>`: whole seconds (at least one), from the previous firing.
    Every(i64),
}

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
    compile(schedule).map(|_| ())
}

/// Compiles a schedule; the error is upstream's message.
pub(crate) fn compile(schedule: &str) -> Result<Schedule, String> {
    if schedule.is_empty() {
        return Err("empty spec string".to_string());
    }
    let mut spec = schedule;
    let mut zone = None;
    if spec.starts_with("TZ=") || spec.starts_with("CRON_TZ=") {
        let (zone_part, rest) = spec
            .split_once(' ')
            .ok_or_else(|| format!("provided bad location {spec}: unknown time zone {spec}"))?;
        let name = zone_part.split_once('=').map_or("", |(_, z)| z);
        check_zone(name).map_err(|e| format!("provided bad location {name}: {e}"))?;
        zone = Some(name.to_string());
        spec = rest.trim();
    }
    if spec.starts_with('@') {
        let rule = descriptor(spec)?;
        return Ok(Schedule { zone, rule });
    }
    let fields: Vec<&str> = spec.split_whitespace().collect();
    if fields.len() != 5 {
        return Err(format!(
            "expected exactly 5 fields, found {}: [{}]",
            fields.len(),
            fields.join(" ")
        ));
    }
    let mut sets = [0u64; 5];
    for ((field, bounds), set) in fields
        .iter()
        .zip([&MINUTES, &HOURS, &DAYS_OF_MONTH, &MONTHS, &DAYS_OF_WEEK])
        .zip(sets.iter_mut())
    {
        for expr in field.split(',').filter(|e| !e.is_empty()) {
            *set |= range(expr, bounds)?;
        }
    }
    let star = |field: &str| field.starts_with('*') || field.starts_with('?');
    Ok(Schedule {
        zone,
        rule: Rule::Fields {
            minute: sets[0],
            hour: sets[1],
            dom: sets[2],
            month: sets[3],
            dow: sets[4],
            dom_star: star(fields[2]),
            dow_star: star(fields[4]),
        },
    })
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
fn descriptor(spec: &str) -> Result<Rule, String> {
    let fields =
        |minute: u64, hour: u64, dom: u64, month: u64, dow: u64, dom_star, dow_star| Rule::Fields {
            minute,
            hour,
            dom,
            month,
            dow,
            dom_star,
            dow_star,
        };
    let all = |b: &Bounds| (b.min..=b.max).fold(0u64, |set, v| set | (1 << v));
    let (months, days, weekdays) = (all(&MONTHS), all(&DAYS_OF_MONTH), all(&DAYS_OF_WEEK));
    match spec {
        "@yearly" | "@annually" => Ok(fields(1, 1, 1 << 1, 1 << 1, weekdays, false, true)),
        "@monthly" => Ok(fields(1, 1, 1 << 1, months, weekdays, false, true)),
        "@weekly" => Ok(fields(1, 1, days, months, 1, true, false)),
        "@daily" | "@midnight" => Ok(fields(1, 1, days, months, weekdays, true, true)),
        "@hourly" => Ok(fields(1, all(&HOURS), days, months, weekdays, true, true)),
        _ => match spec.strip_prefix("@every ") {
            Some(duration) => crate::go_duration::parse(duration)
                .map(|nanos| {
                    // Below a second rounds up to one; otherwise truncated to seconds.
                    Rule::Every((nanos / 1_000_000_000).max(1))
                })
                .map_err(|e| format!("failed to parse duration {spec}: {e}")),
            None => Err(format!("unrecognized descriptor: {spec}")),
        },
    }
}

impl Schedule {
    /// The first firing strictly after `after`, in `zone` (the schedule's own `TZ=` zone wins);
    /// `None` when none comes within five years.
    pub(crate) fn next(&self, after: Timestamp, zone: &TimeZone) -> Option<Timestamp> {
        let zone = match &self.zone {
            Some(name) => zone_named(name).unwrap_or_else(|| zone.clone()),
            None => zone.clone(),
        };
        let (minute, hour, dom, month, dow, dom_star, dow_star) = match &self.rule {
            Rule::Every(seconds) => {
                // Whole seconds from `after`, as `ConstantDelaySchedule` counts.
                let start = Timestamp::from_second(after.as_second()).ok()?;
                return start.checked_add(seconds.seconds()).ok();
            }
            Rule::Fields {
                minute,
                hour,
                dom,
                month,
                dow,
                dom_star,
                dow_star,
            } => (*minute, *hour, *dom, *month, *dow, *dom_star, *dow_star),
        };
        let has = |set: u64, value: i8| u8::try_from(value).is_ok_and(|v| set & (1 << v) != 0);
        let start = after.to_zoned(zone.clone());
        // The next whole minute after `after`.
        let mut t: Zoned = start
            .with()
            .second(0)
            .subsec_nanosecond(0)
            .build()
            .ok()?
            .checked_add(1.minute())
            .ok()?;
        let limit = start.year().saturating_add(5);
        while t.year() <= limit {
            if !has(month, t.month()) {
                t = t
                    .first_of_month()
                    .ok()?
                    .start_of_day()
                    .ok()?
                    .checked_add(1.month())
                    .ok()?;
                continue;
            }
            let day_matches = {
                let d = has(dom, t.day());
                let w = has(dow, t.weekday().to_sunday_zero_offset());
                if dom_star || dow_star { d && w } else { d || w }
            };
            if !day_matches {
                t = t.start_of_day().ok()?.checked_add(1.day()).ok()?;
                continue;
            }
            if !has(hour, t.hour()) {
                t = t
                    .with()
                    .minute(0)
                    .build()
                    .ok()?
                    .checked_add(1.hour())
                    .ok()?;
                continue;
            }
            if !has(minute, t.minute()) {
                t = t.checked_add(1.minute()).ok()?;
                continue;
            }
            return Some(t.timestamp());
        }
        None
    }

    /// The latest firing in `(after, until]`, if any (upstream's `mostRecentScheduleTime`).
    pub(crate) fn most_recent(
        &self,
        after: Timestamp,
        until: Timestamp,
        zone: &TimeZone,
    ) -> Option<Timestamp> {
        let mut latest = None;
        let mut t = after;
        // A schedule firing every minute over a long outage is bounded like upstream's
        // (which gives up past 100 missed starts): only the most recent one matters here.
        for _ in 0..100_000 {
            match self.next(t, zone) {
                Some(next) if next <= until => {
                    latest = Some(next);
                    t = next;
                }
                _ => break,
            }
        }
        latest
    }
}

/// The time zone `name` (`UTC` and `Local` included).
pub(crate) fn zone_named(name: &str) -> Option<TimeZone> {
    match name {
        "" | "UTC" => Some(TimeZone::UTC),
        "Local" => Some(TimeZone::system()),
        _ => TimeZone::get(name).ok(),
    }
}

/// One `low[-high][/step]` expression of a field, as the set of values it matches.
fn range(expr: &str, bounds: &Bounds) -> Result<u64, String> {
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
    let step = usize::try_from(step).unwrap_or(usize::MAX);
    Ok((start..=end)
        .step_by(step)
        .fold(0u64, |set, v| set | (1 << v)))
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

    fn at(text: &str) -> Timestamp {
        text.parse().expect("timestamp")
    }

    #[test]
    fn next_firings_follow_the_fields() {
        let utc = TimeZone::UTC;
        let cases = [
            (
                "*/15 * * * *",
                "2026-11-28T10:07:30Z",
                "2026-11-28T10:15:00Z",
            ),
            ("0 0 * * *", "2026-11-28T10:07:00Z", "2026-11-29T00:00:00Z"),
            (
                "30 8 * * mon-fri",
                "2026-11-28T10:00:00Z",
                "2026-11-30T08:30:00Z",
            ),
            (
                "0 0 1 */3 *",
                "2026-11-28T10:00:00Z",
                "2027-01-01T00:00:00Z",
            ),
            // Both day fields restricted: either matches (the 13th, or a Friday).
            ("0 0 13 * 5", "2026-11-28T10:00:00Z", "2026-12-04T00:00:00Z"),
            ("@hourly", "2026-11-28T10:00:00Z", "2026-11-28T11:00:00Z"),
            ("@weekly", "2026-11-28T10:00:00Z", "2026-11-29T00:00:00Z"),
            ("@yearly", "2026-11-28T10:00:00Z", "2027-01-01T00:00:00Z"),
            (
                "@every 90s",
                "2026-11-28T10:00:00.5Z",
                "2026-11-28T10:01:30Z",
            ),
        ];
        for (schedule, after, want) in cases {
            let compiled = compile(schedule).expect(schedule);
            assert_eq!(compiled.next(at(after), &utc), Some(at(want)), "{schedule}");
        }
        // A zone of the schedule text wins (where the system has the time zone database).
        if zone_named("Europe/Paris").is_some() {
            let paris = compile("TZ=Europe/Paris 0 9 * * *").expect("paris");
            assert_eq!(
                paris.next(at("2026-11-28T10:00:00Z"), &utc),
                Some(at("2026-11-29T08:00:00Z"))
            );
        }
        assert_eq!(
            compile("0 0 30 2 *")
                .expect("feb 30")
                .next(at("2026-01-01T00:00:00Z"), &utc),
            None
        );
    }

    #[test]
    fn most_recent_is_the_latest_missed_firing() {
        let every_minute = compile("* * * * *").expect("schedule");
        let utc = TimeZone::UTC;
        assert_eq!(
            every_minute.most_recent(at("2026-11-28T10:00:00Z"), at("2026-11-28T10:05:30Z"), &utc),
            Some(at("2026-11-28T10:05:00Z"))
        );
        assert_eq!(
            every_minute.most_recent(at("2026-11-28T10:05:00Z"), at("2026-11-28T10:05:30Z"), &utc),
            None
        );
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
