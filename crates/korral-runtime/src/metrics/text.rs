//! Pieces of the Prometheus text exposition format 0.0.4: escaping and number formatting.

use std::fmt::Write as _;

/// Appends `help` escaped for a `# HELP` line (`\` and newline).
pub(crate) fn push_escaped_help(out: &mut String, help: &str) {
    for c in help.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
}

/// Appends `value` escaped for a label value (`\`, `"` and newline).
pub(crate) fn push_escaped_label_value(out: &mut String, value: &str) {
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
}

/// Appends an unsigned integer.
pub(crate) fn push_u64(out: &mut String, value: u64) {
    // Writing into a String cannot fail.
    let _ = write!(out, "{value}");
}

/// Appends `value` the way the Go Prometheus client does (`strconv.FormatFloat(v, 'g', -1, 64)`,
/// with `+Inf`, `-Inf` and `NaN`): the shortest digits that read back to the same number, in
/// exponent form (`1e-08`, `1.234567e+06`) when the decimal exponent is below -4 or at least 6,
/// plain otherwise (`0.0001`, `123456`). Bucket bounds must match Go's byte for byte, since
/// `le` is a label and dashboards select on it.
pub(crate) fn push_float(out: &mut String, value: f64) {
    if value.is_nan() {
        out.push_str("NaN");
        return;
    }
    if value.is_infinite() {
        out.push_str(if value > 0.0 { "+Inf" } else { "-Inf" });
        return;
    }
    if value == 0.0 {
        out.push_str(if value.is_sign_negative() { "-0" } else { "0" });
        return;
    }
    // Rust's `{:e}` gives the shortest round-trip digits, e.g. `-1.2345e-7`.
    let scientific = format!("{value:e}");
    let Some((mantissa, exponent)) = scientific.split_once('e') else {
        let _ = write!(out, "{value}");
        return;
    };
    let Ok(exponent) = exponent.parse::<i32>() else {
        let _ = write!(out, "{value}");
        return;
    };
    let mantissa = match mantissa.strip_prefix('-') {
        Some(rest) => {
            out.push('-');
            rest
        }
        None => mantissa,
    };
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    if !(-4..6).contains(&exponent) {
        let (first, rest) = digits.split_at(1.min(digits.len()));
        out.push_str(first);
        if !rest.is_empty() {
            out.push('.');
            out.push_str(rest);
        }
        out.push('e');
        out.push(if exponent < 0 { '-' } else { '+' });
        let magnitude = exponent.unsigned_abs();
        if magnitude < 10 {
            out.push('0');
        }
        let _ = write!(out, "{magnitude}");
        return;
    }
    // Digits before the decimal point; -4 <= exponent < 6 keeps this small.
    let point = exponent + 1;
    let len = i32::try_from(digits.len()).unwrap_or(i32::MAX);
    if point <= 0 {
        out.push_str("0.");
        for _ in 0..-point {
            out.push('0');
        }
        out.push_str(&digits);
    } else if point >= len {
        out.push_str(&digits);
        for _ in 0..(point - len) {
            out.push('0');
        }
    } else {
        let split = usize::try_from(point).unwrap_or(0);
        let (int, frac) = digits.split_at(split.min(digits.len()));
        out.push_str(int);
        out.push('.');
        out.push_str(frac);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn float(v: f64) -> String {
        let mut s = String::new();
        push_float(&mut s, v);
        s
    }

    #[test]
    fn metrics_floats_are_formatted_like_go() {
        let cases: &[(f64, &str)] = &[
            (0.0, "0"),
            (-0.0, "-0"),
            (1.0, "1"),
            (3.0, "3"),
            (100.0, "100"),
            (123_456.0, "123456"),
            (999_999.0, "999999"),
            (1_000_000.0, "1e+06"),
            (1_234_567.0, "1.234567e+06"),
            (24_797_184.0, "2.4797184e+07"),
            (1e21, "1e+21"),
            (1e100, "1e+100"),
            (0.1, "0.1"),
            (0.005, "0.005"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (2.5e-5, "2.5e-05"),
            (1e-8, "1e-08"),
            (1e-300, "1e-300"),
            (-0.5, "-0.5"),
            (-1_500_000.0, "-1.5e+06"),
            (1.25, "1.25"),
            (12.5, "12.5"),
            (0.123_456_789, "0.123456789"),
            (f64::INFINITY, "+Inf"),
            (f64::NEG_INFINITY, "-Inf"),
            (f64::NAN, "NaN"),
        ];
        for (value, want) in cases {
            assert_eq!(float(*value), *want, "formatting {value:?}");
        }
    }

    #[test]
    fn metrics_escaping() {
        let mut help = String::new();
        push_escaped_help(&mut help, "a\\b\n\"c\"");
        assert_eq!(help, "a\\\\b\\n\"c\"");
        let mut label = String::new();
        push_escaped_label_value(&mut label, "a\\b\n\"c\"");
        assert_eq!(label, "a\\\\b\\n\\\"c\\\"");
    }
}
