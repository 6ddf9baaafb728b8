//! Go's `time.Duration` as text: [`parse`] reads what `time.ParseDuration` reads (`1h2m3.5s`,
//! `-1.5ms`, `300ms`, `0`) and [`format`] writes what `Duration.String()` writes (`1h2m3.5s`,
//! `1.5ms`, `0s`). Durations are whole nanoseconds in an `i64`, as Go's.

/// Why a text is not a Go duration, with `time.ParseDuration`'s messages.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ParseError {
    /// Malformed, or outside the `i64` nanosecond range.
    #[error("time: invalid duration {0:?}")]
    Invalid(String),
    /// A number without its unit.
    #[error("time: missing unit in duration {0:?}")]
    MissingUnit(String),
    /// A unit Go does not know.
    #[error("time: unknown unit {unit:?} in duration {text:?}")]
    UnknownUnit {
        /// The unit as written.
        unit: String,
        /// The whole text.
        text: String,
    },
}

/// The largest magnitude a duration's nanoseconds reach (that of `i64::MIN`).
const OVER: u64 = 1 << 63;

/// Parses `text` as `time.ParseDuration` does, into nanoseconds.
pub(crate) fn parse(text: &str) -> Result<i64, ParseError> {
    let invalid = || ParseError::Invalid(text.to_string());
    let (neg, mut s) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    if s == "0" {
        return Ok(0);
    }
    if s.is_empty() {
        return Err(invalid());
    }
    let mut total: u64 = 0;
    while !s.is_empty() {
        let bytes = s.as_bytes();
        if !(bytes[0] == b'.' || bytes[0].is_ascii_digit()) {
            return Err(invalid());
        }
        // The integer part.
        let int_len = bytes.iter().take_while(|b| b.is_ascii_digit()).count();
        let mut v: u64 = 0;
        for b in &bytes[..int_len] {
            v = v
                .checked_mul(10)
                .and_then(|v| v.checked_add(u64::from(b - b'0')))
                .filter(|v| *v <= OVER)
                .ok_or_else(invalid)?;
        }
        s = &s[int_len..];
        // The fraction: digits past what fits are read but ignored, as Go does.
        let mut frac: u64 = 0;
        let mut scale: f64 = 1.0;
        let mut frac_len = 0;
        if let Some(rest) = s.strip_prefix('.') {
            s = rest;
            frac_len = s.bytes().take_while(u8::is_ascii_digit).count();
            let mut overflow = false;
            for b in &s.as_bytes()[..frac_len] {
                if overflow {
                    continue;
                }
                match frac
                    .checked_mul(10)
                    .and_then(|f| f.checked_add(u64::from(b - b'0')))
                {
                    Some(f) if f <= OVER => {
                        frac = f;
                        scale *= 10.0;
                    }
                    _ => overflow = true,
                }
            }
            s = &s[frac_len..];
        }
        if int_len == 0 && frac_len == 0 {
            return Err(invalid());
        }
        let unit_len = s
            .find(|c: char| c == '.' || c.is_ascii_digit())
            .unwrap_or(s.len());
        if unit_len == 0 {
            return Err(ParseError::MissingUnit(text.to_string()));
        }
        let unit: u64 = match &s[..unit_len] {
            "ns" => 1,
            "us" | "\u{b5}s" | "\u{3bc}s" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60_000_000_000,
            "h" => 3_600_000_000_000,
            other => {
                return Err(ParseError::UnknownUnit {
                    unit: other.to_string(),
                    text: text.to_string(),
                });
            }
        };
        s = &s[unit_len..];
        if v > OVER / unit {
            return Err(invalid());
        }
        v *= unit;
        if frac > 0 {
            v = v
                .checked_add((frac as f64 * (unit as f64 / scale)) as u64)
                .filter(|v| *v <= OVER)
                .ok_or_else(invalid)?;
        }
        total = total
            .checked_add(v)
            .filter(|t| *t <= OVER)
            .ok_or_else(invalid)?;
    }
    if neg {
        return Ok((total as i64).wrapping_neg());
    }
    i64::try_from(total).map_err(|_| invalid())
}

/// Writes `nanos` as `Duration.String()` does.
pub(crate) fn format(nanos: i64) -> String {
    let u = nanos.unsigned_abs();
    let mut out = String::new();
    if nanos < 0 {
        out.push('-');
    }
    if u == 0 {
        return "0s".to_owned();
    }
    if u < 1_000_000_000 {
        let (unit, prec) = if u < 1_000 {
            ("ns", 0)
        } else if u < 1_000_000 {
            ("µs", 3)
        } else {
            ("ms", 6)
        };
        let scale = 10u64.pow(prec);
        out.push_str(&(u / scale).to_string());
        out.push_str(&fraction(u % scale, prec));
        out.push_str(unit);
        return out;
    }
    let frac = fraction(u % 1_000_000_000, 9);
    let secs = u / 1_000_000_000;
    let (hours, minutes, seconds) = (secs / 3600, (secs / 60) % 60, secs % 60);
    if hours > 0 {
        out.push_str(&format!("{hours}h{minutes}m"));
    } else if secs >= 60 {
        out.push_str(&format!("{minutes}m"));
    }
    out.push_str(&format!("{seconds}{frac}s"));
    out
}

/// Writes a `std` duration as `Duration.String()` does (past Go's range: its largest).
pub(crate) fn format_std(d: std::time::Duration) -> String {
    format(i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

/// `.digits` of a fraction of `prec` digits, trailing zeros dropped (empty for none).
fn fraction(v: u64, prec: u32) -> String {
    if v == 0 || prec == 0 {
        return String::new();
    }
    let digits = format!("{v:0width$}", width = prec as usize);
    format!(".{}", digits.trim_end_matches('0'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_as_go() {
        for (nanos, text) in [
            (0, "0s"),
            (1, "1ns"),
            (1_500, "1.5µs"),
            (1_500_000, "1.5ms"),
            (1_000_000_000, "1s"),
            (90_000_000_000, "1m30s"),
            (3_600_000_000_000, "1h0m0s"),
            (3_723_500_000_000, "1h2m3.5s"),
            (-2_000_000, "-2ms"),
            (i64::MIN, "-2562047h47m16.854775808s"),
        ] {
            assert_eq!(format(nanos), text);
        }
    }

    #[test]
    fn parses_as_go() {
        for text in ["0s", "1h0m0s", "1m30s", "1.5s", "-2ms", "1µs", "1ns"] {
            assert_eq!(parse(text).map(format).as_deref(), Ok(text));
        }
        for (text, nanos) in [
            ("0", 0),
            ("+5s", 5_000_000_000),
            ("1.5h", 5_400_000_000_000),
            ("1h1m", 3_660_000_000_000),
            (".5s", 500_000_000),
            ("3us", 3_000),
            ("3μs", 3_000),
            ("2562047h47m16.854775807s", i64::MAX),
            ("-9223372036854775808ns", i64::MIN),
        ] {
            assert_eq!(parse(text), Ok(nanos), "{text}");
        }
        for bad in [
            "",
            "-",
            "s",
            "1.s.",
            ".s",
            "9223372036854775808ns",
            "1e3s",
            "1 s",
        ] {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn errors_read_as_go_s() {
        let message = |t: &str| parse(t).map_err(|e| e.to_string());
        assert_eq!(
            message("1"),
            Err(r#"time: missing unit in duration "1""#.into())
        );
        assert_eq!(
            message("1x"),
            Err(r#"time: unknown unit "x" in duration "1x""#.into())
        );
        assert_eq!(message("x"), Err(r#"time: invalid duration "x""#.into()));
    }
}
