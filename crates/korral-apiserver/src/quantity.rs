//! Kubernetes `resource.Quantity`: parsing, comparison and the canonical form upstream
//! serializes (`k8s.io/apimachinery/pkg/api/resource`).
//!
//! A quantity is `<sign><number><suffix>`: a decimal number (`1`, `1.5`, `.5`, `1.`) followed
//! by a decimal SI suffix (`n u m k M G T P E`), a binary one (`Ki Mi Gi Ti Pi Ei`) or a
//! decimal exponent (`e3`, `E-2`). Upstream keeps the value exactly (no floating point),
//! rounds a non-zero value finer than `1n` up to `1n`, caps a binary value at 2^63-1, and
//! serializes it in canonical form: no fractional digits, the largest suffix of the parsed
//! kind that loses nothing (`0.5` → `500m`, `1024Mi` → `1Gi`, `1.5Gi` → `1536Mi`,
//! `1000m` → `1`). A string upstream already considers canonical is kept as written.
//!
//! A malformed quantity cannot be decoded at all: upstream answers 400 (`Pod in version "v1"
//! cannot be handled as a Pod: quantities must match the regular expression …`), see
//! [`undecodable`].

use std::cmp::Ordering;
use std::fmt;

use serde_json::Value;

use crate::error::ApiError;
use crate::registry::ResourceInfo;

/// Why a string is not a quantity; the messages are upstream's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub(crate) enum QuantityError {
    /// The string does not have the shape of a quantity.
    #[error(
        "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
    )]
    Format,
    /// The number before the suffix cannot be read.
    #[error("unable to parse numeric part of quantity")]
    Numeric,
    /// The suffix is none of the known ones.
    #[error("unable to parse quantity's suffix")]
    Suffix,
}

/// How a quantity is written, remembered from its suffix and used again to serialize it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    /// `12e6`.
    DecimalExponent,
    /// `12Mi` (12 × 2^20).
    BinarySI,
    /// `12M` (12 × 10^6), and no suffix.
    DecimalSI,
}

/// A parsed quantity: `±digits × 10^exponent`, exactly.
#[derive(Debug, Clone)]
pub(crate) struct Quantity {
    negative: bool,
    /// Decimal digits of the magnitude, most significant first, without leading or trailing
    /// zeros; empty for zero.
    digits: Vec<u8>,
    exponent: i64,
    format: Format,
    /// The input, when upstream serializes the quantity as it was written.
    written: Option<String>,
}

/// Decimal SI suffixes and their powers of ten.
const DECIMAL_SUFFIXES: [(&str, i64); 10] = [
    ("n", -9),
    ("u", -6),
    ("m", -3),
    ("", 0),
    ("k", 3),
    ("M", 6),
    ("G", 9),
    ("T", 12),
    ("P", 15),
    ("E", 18),
];

/// Binary SI suffixes and their powers of two.
const BINARY_SUFFIXES: [(&str, u32); 6] = [
    ("Ki", 10),
    ("Mi", 20),
    ("Gi", 30),
    ("Ti", 40),
    ("Pi", 50),
    ("Ei", 60),
];

/// The most digits upstream's fast path holds in an int64.
const MAX_INT64_FACTORS: usize = 18;

/// The finest scale a quantity keeps (nano).
const NANO: i64 = -9;

/// The number and suffix of a quantity string, as upstream's scanner splits them.
struct Scanned<'a> {
    positive: bool,
    /// The signed number without its suffix, as written.
    value: &'a str,
    /// Integer digits without leading zeros (`"0"` when there are none).
    num: &'a str,
    /// Fraction digits.
    denom: &'a str,
    suffix: &'a str,
}

/// Splits a quantity string as upstream's `parseQuantityString` does.
fn scan(s: &str) -> Result<Scanned<'_>, QuantityError> {
    let b = s.as_bytes();
    let end = b.len();
    let mut pos = 0;
    let mut positive = true;
    match b.first() {
        Some(b'-') => {
            positive = false;
            pos += 1;
        }
        Some(b'+') => pos += 1,
        _ => {}
    }
    while pos < end && b[pos] == b'0' {
        pos += 1;
    }
    if pos >= end {
        return Ok(Scanned {
            positive,
            value: "0",
            num: "0",
            denom: "",
            suffix: "",
        });
    }
    let start = pos;
    while pos < end && b[pos].is_ascii_digit() {
        pos += 1;
    }
    let mut num = &s[start..pos];
    if pos >= end {
        return Ok(Scanned {
            positive,
            value: s,
            num,
            denom: "",
            suffix: "",
        });
    }
    if num.is_empty() {
        num = "0";
    }
    let mut denom = "";
    if b[pos] == b'.' {
        pos += 1;
        let start = pos;
        while pos < end && b[pos].is_ascii_digit() {
            pos += 1;
        }
        denom = &s[start..pos];
        if pos >= end {
            return Ok(Scanned {
                positive,
                value: s,
                num,
                denom,
                suffix: "",
            });
        }
    }
    let value = &s[..pos];
    let suffix_start = pos;
    while pos < end && b"eEinumkKMGTP".contains(&b[pos]) {
        pos += 1;
    }
    if pos < end && (b[pos] == b'-' || b[pos] == b'+') {
        pos += 1;
    }
    while pos < end && b[pos].is_ascii_digit() {
        pos += 1;
    }
    if pos < end {
        return Err(QuantityError::Format);
    }
    Ok(Scanned {
        positive,
        value,
        num,
        denom,
        suffix: &s[suffix_start..],
    })
}

/// The base (10 or 2), exponent and format a suffix stands for.
fn interpret(suffix: &str) -> Option<(u32, i64, Format)> {
    if let Some((_, e)) = DECIMAL_SUFFIXES.iter().find(|(s, _)| *s == suffix) {
        return Some((10, *e, Format::DecimalSI));
    }
    if let Some((_, e)) = BINARY_SUFFIXES.iter().find(|(s, _)| *s == suffix) {
        return Some((2, i64::from(*e), Format::BinarySI));
    }
    let rest = suffix
        .strip_prefix('e')
        .or_else(|| suffix.strip_prefix('E'))
        .filter(|r| !r.is_empty())?;
    // Go's ParseInt takes a sign; the result is truncated to 32 bits as upstream does.
    let parsed: i64 = rest.parse().ok()?;
    Some((10, i64::from(parsed as i32), Format::DecimalExponent))
}

/// The int64 of upstream's fast path (`num` and `denom` as one integer) when the fast path
/// applies: few enough digits, no scale finer than nano, no overflow.
fn fast_path_value(sc: &Scanned<'_>, exponent: i64, format: Format) -> Option<i64> {
    let digits = sc.num.len() + sc.denom.len();
    match format {
        Format::BinarySI => {
            if exponent < 0 || !sc.denom.is_empty() {
                return None;
            }
            // Upstream's estimate of the decimal digits a binary suffix adds.
            let precision = 15 - sc.num.len() as i64 - (exponent as f32 * 3.0 / 10.0) as i64 - 1;
            if precision < 0 {
                return None;
            }
            let value = sc.num.parse::<i64>().ok()?;
            let mantissa = 1i64.checked_shl(u32::try_from(exponent).ok()?)?;
            value.checked_mul(mantissa).map(|_| value)
        }
        Format::DecimalSI | Format::DecimalExponent => {
            if digits > MAX_INT64_FACTORS || exponent - (sc.denom.len() as i64) < NANO {
                return None;
            }
            format!("{}{}", sc.num, sc.denom).parse::<i64>().ok()
        }
    }
}

/// Whether upstream reads the number on its int64 fast path (otherwise with `inf.Dec`).
fn fast_path(sc: &Scanned<'_>, exponent: i64, format: Format) -> bool {
    fast_path_value(sc, exponent, format).is_some()
}

/// Whether upstream's fast path keeps the string as the quantity's serialization.
fn kept_as_written(sc: &Scanned<'_>, exponent: i64, format: Format) -> bool {
    let Some(value) = fast_path_value(sc, exponent, format) else {
        return false;
    };
    match format {
        Format::BinarySI => exponent % 10 == 0 && value & 0x07 != 0,
        Format::DecimalSI | Format::DecimalExponent => {
            let shifted = format!("{}{}", sc.num, sc.denom);
            (exponent - sc.denom.len() as i64) % 3 == 0
                && !shifted.ends_with("000")
                && !shifted.starts_with('0')
        }
    }
}

impl Quantity {
    /// Parses a quantity as upstream's `ParseQuantity` does.
    pub(crate) fn parse(s: &str) -> Result<Self, QuantityError> {
        if s.is_empty() {
            return Err(QuantityError::Format);
        }
        if s == "0" {
            return Ok(Self::zero(Some(s.to_string())));
        }
        let sc = scan(s)?;
        let (base, exponent, mut format) = interpret(sc.suffix).ok_or(QuantityError::Suffix)?;
        let written = kept_as_written(&sc, exponent, format).then(|| s.to_string());
        if !fast_path(&sc, exponent, format) && !sc.value.bytes().any(|c| c.is_ascii_digit()) {
            // The slow path reads the number with inf.Dec, which wants a digit.
            return Err(QuantityError::Numeric);
        }
        if format == Format::BinarySI && sc.num.len() > 19 {
            // At least 10^19 before the suffix: above 2^63-1, where binary values are capped.
            let mut q = Self::max_int64();
            q.negative = !sc.positive;
            return Ok(q);
        }
        let mut digits: Vec<u8> = sc
            .num
            .bytes()
            .chain(sc.denom.bytes())
            .map(|c| c - b'0')
            .collect();
        let mut exp = -(sc.denom.len() as i64);
        if base == 10 {
            exp += exponent;
        } else {
            for _ in 0..exponent {
                mul_small(&mut digits, 2);
            }
        }
        let mut q = Self {
            negative: !sc.positive,
            digits,
            exponent: exp,
            format,
            written,
        };
        q.normalize();
        if q.written.is_none() {
            q.round_up_to_nano();
            if format == Format::BinarySI
                && q.cmp_magnitude(&Self::max_int64()) == Ordering::Greater
            {
                let negative = q.negative;
                q = Self::max_int64();
                q.negative = negative;
            }
            if format == Format::BinarySI && !q.is_zero() && q.magnitude_below_one() {
                format = Format::DecimalSI;
            }
            q.format = format;
        }
        Ok(q)
    }

    /// Parses a quantity as it arrives in JSON: surrounding whitespace ignored, as upstream's
    /// `UnmarshalJSON` does.
    pub(crate) fn parse_json(s: &str) -> Result<Self, QuantityError> {
        Self::parse(s.trim())
    }

    fn zero(written: Option<String>) -> Self {
        Self {
            negative: false,
            digits: Vec::new(),
            exponent: 0,
            format: Format::DecimalSI,
            written,
        }
    }

    /// The value as a float (for ratios, as upstream divides `MilliValue`s).
    pub(crate) fn canonical_f64(&self) -> f64 {
        let mut v = 0f64;
        for d in &self.digits {
            v = v * 10.0 + f64::from(*d);
        }
        let v = v * 10f64.powi(i32::try_from(self.exponent).unwrap_or(i32::MAX));
        if self.negative { -v } else { v }
    }

    /// Zero (`0`).
    pub(crate) fn zero_value() -> Self {
        Self::zero(None)
    }

    /// A whole number (counts: `pods=3`).
    pub(crate) fn from_count(n: u64) -> Self {
        let mut q = Self {
            negative: false,
            digits: n.to_string().bytes().map(|c| c - b'0').collect(),
            exponent: 0,
            format: Format::DecimalSI,
            written: None,
        };
        q.normalize();
        q
    }

    fn max_int64() -> Self {
        let mut q = Self {
            negative: false,
            digits: i64::MAX.to_string().bytes().map(|c| c - b'0').collect(),
            exponent: 0,
            format: Format::BinarySI,
            written: None,
        };
        q.normalize();
        q
    }

    /// Strips leading zeros and moves trailing zeros into the exponent.
    fn normalize(&mut self) {
        let lead = self.digits.iter().take_while(|d| **d == 0).count();
        self.digits.drain(..lead);
        while self.digits.last() == Some(&0) {
            self.digits.pop();
            self.exponent += 1;
        }
        if self.digits.is_empty() {
            self.exponent = 0;
            self.negative = false;
        }
    }

    /// Rounds a non-zero magnitude finer than nano up (away from zero) to nano.
    fn round_up_to_nano(&mut self) {
        if self.is_zero() || self.exponent >= NANO {
            return;
        }
        let drop = usize::try_from(NANO - self.exponent).unwrap_or(usize::MAX);
        if drop >= self.digits.len() {
            self.digits = vec![1];
        } else {
            self.digits.truncate(self.digits.len() - drop);
            add_one(&mut self.digits);
        }
        self.exponent = NANO;
        self.normalize();
    }

    /// Whether the magnitude is below one.
    fn magnitude_below_one(&self) -> bool {
        self.digits.len() as i64 + self.exponent <= 0
    }

    /// Whether the quantity is zero.
    pub(crate) fn is_zero(&self) -> bool {
        self.digits.is_empty()
    }

    /// Whether the quantity is below zero.
    pub(crate) fn is_negative(&self) -> bool {
        self.negative && !self.is_zero()
    }

    /// Whether the quantity is a whole number (upstream: `MilliValue() % 1000 == 0`).
    pub(crate) fn is_integer(&self) -> bool {
        self.exponent >= 0
    }

    fn cmp_magnitude(&self, other: &Self) -> Ordering {
        match (self.is_zero(), other.is_zero()) {
            (true, true) => return Ordering::Equal,
            (true, false) => return Ordering::Less,
            (false, true) => return Ordering::Greater,
            _ => {}
        }
        let top = self.digits.len() as i64 + self.exponent;
        let other_top = other.digits.len() as i64 + other.exponent;
        top.cmp(&other_top).then_with(|| {
            let n = self.digits.len().max(other.digits.len());
            (0..n)
                .map(|i| {
                    let a = self.digits.get(i).copied().unwrap_or(0);
                    let b = other.digits.get(i).copied().unwrap_or(0);
                    a.cmp(&b)
                })
                .find(|o| o.is_ne())
                .unwrap_or(Ordering::Equal)
        })
    }

    /// Compares two quantities by value (`1Gi` = `1024Mi`, `1` = `1000m`).
    pub(crate) fn cmp(&self, other: &Self) -> Ordering {
        match (self.is_negative(), other.is_negative()) {
            (false, true) => Ordering::Greater,
            (true, false) => Ordering::Less,
            (false, false) => self.cmp_magnitude(other),
            (true, true) => other.cmp_magnitude(self),
        }
    }

    /// The canonical serialization upstream writes (`CanonicalizeBytes`), or the input when
    /// upstream keeps it.
    pub(crate) fn canonical(&self) -> String {
        if let Some(written) = &self.written {
            return written.clone();
        }
        if self.is_zero() {
            return "0".to_string();
        }
        let sign = if self.negative { "-" } else { "" };
        let mut format = self.format;
        if format == Format::BinarySI {
            let below_1024 = self.digits.len() as i64 + self.exponent < 4
                || (self.digits.len() as i64 + self.exponent == 4
                    && self.cmp_magnitude(&Self::from_u64(1024)) == Ordering::Less);
            if below_1024 || self.exponent < 0 {
                format = Format::DecimalSI;
            }
        }
        if format == Format::BinarySI {
            let mut integer = self.digits.clone();
            integer.extend(std::iter::repeat_n(0, self.exponent.max(0) as usize));
            let mut power = 0usize;
            while integer.len() >= 4 {
                let mut quotient = integer.clone();
                if div_small(&mut quotient, 1024) != 0 {
                    break;
                }
                integer = quotient;
                power += 1;
            }
            let suffix = match power {
                0 => "",
                p => BINARY_SUFFIXES.get(p - 1).map_or("", |(s, _)| *s),
            };
            return format!("{sign}{}{suffix}", render_digits(&integer));
        }
        let mut digits = self.digits.clone();
        let mut exponent = self.exponent;
        while exponent.rem_euclid(3) != 0 {
            digits.push(0);
            exponent -= 1;
        }
        let suffix = match format {
            Format::DecimalSI => DECIMAL_SUFFIXES
                .iter()
                .find(|(_, e)| *e == exponent)
                .map(|(s, _)| (*s).to_string()),
            _ => None,
        }
        .unwrap_or_else(|| {
            if exponent == 0 {
                String::new()
            } else {
                format!("e{exponent}")
            }
        });
        format!("{sign}{}{suffix}", render_digits(&digits))
    }

    /// The sum of two quantities, in the format of the first unless it is zero (upstream's
    /// `Add`). `None` when the operands' scales are so far apart that the exact sum would need
    /// more than [`MAX_SUM_DIGITS`] digits.
    pub(crate) fn checked_add(&self, other: &Self) -> Option<Self> {
        if other.is_zero() {
            let mut sum = self.clone();
            sum.written = None;
            return Some(sum);
        }
        if self.is_zero() {
            let mut sum = other.clone();
            sum.written = None;
            return Some(sum);
        }
        let low = self.exponent.min(other.exponent);
        let high = (self.digits.len() as i64 + self.exponent)
            .max(other.digits.len() as i64 + other.exponent);
        if high - low > MAX_SUM_DIGITS {
            return None;
        }
        let width = usize::try_from(high - low).ok()? + 1;
        let align = |q: &Self| -> Option<Vec<u8>> {
            let mut v = vec![0u8; width];
            let end = width - usize::try_from(q.exponent - low).ok()?;
            let start = end.checked_sub(q.digits.len())?;
            v[start..end].copy_from_slice(&q.digits);
            Some(v)
        };
        let (a, b) = (align(self)?, align(other)?);
        let (negative, digits) = if self.negative == other.negative {
            (self.negative, add_digits(&a, &b))
        } else {
            match self.cmp_magnitude(other) {
                Ordering::Equal => (false, Vec::new()),
                Ordering::Greater => (self.negative, sub_digits(&a, &b)),
                Ordering::Less => (other.negative, sub_digits(&b, &a)),
            }
        };
        let mut sum = Self {
            negative,
            digits,
            exponent: low,
            format: self.format,
            written: None,
        };
        sum.normalize();
        Some(sum)
    }

    /// The value rounded up to a whole number, saturated to `i64` (upstream's `Value()`).
    pub(crate) fn ceil_i64(&self) -> i64 {
        if self.is_zero() {
            return 0;
        }
        // Digits before the decimal point.
        let whole = self.digits.len() as i64 + self.exponent;
        if whole > 19 {
            return if self.negative { i64::MIN } else { i64::MAX };
        }
        let mut value: i128 = 0;
        let mut fraction = false;
        for (i, d) in self.digits.iter().enumerate() {
            if (i as i64) < whole {
                value = value * 10 + i128::from(*d);
            } else if *d != 0 {
                fraction = true;
            }
        }
        for _ in 0..self.exponent.max(0) {
            value *= 10;
        }
        let value = if self.negative {
            -value
        } else if fraction {
            value + 1
        } else {
            value
        };
        i64::try_from(value).unwrap_or(if self.negative { i64::MIN } else { i64::MAX })
    }

    /// The whole number `n` in `format` (upstream's `NewQuantity`).
    pub(crate) fn from_i64(n: i64, format: Format) -> Self {
        let mut q = Self {
            negative: n < 0,
            digits: n
                .unsigned_abs()
                .to_string()
                .bytes()
                .map(|c| c - b'0')
                .collect(),
            exponent: 0,
            format,
            written: None,
        };
        q.normalize();
        q
    }

    fn from_u64(n: u64) -> Self {
        let mut q = Self {
            negative: false,
            digits: n.to_string().bytes().map(|c| c - b'0').collect(),
            exponent: 0,
            format: Format::DecimalSI,
            written: None,
        };
        q.normalize();
        q
    }
}

impl PartialEq for Quantity {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl fmt::Display for Quantity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.canonical())
    }
}

fn render_digits(digits: &[u8]) -> String {
    if digits.is_empty() {
        return "0".to_string();
    }
    digits.iter().map(|d| char::from(b'0' + d)).collect()
}

/// The most digits an exact sum may span.
const MAX_SUM_DIGITS: i64 = 1024;

/// The sum of two equally long digit vectors.
fn add_digits(a: &[u8], b: &[u8]) -> Vec<u8> {
    let mut out = vec![0u8; a.len()];
    let mut carry = 0u8;
    for i in (0..a.len()).rev() {
        let v = a[i] + b[i] + carry;
        out[i] = v % 10;
        carry = v / 10;
    }
    if carry > 0 {
        out.insert(0, carry);
    }
    out
}

/// `a - b` for equally long digit vectors with `a >= b`.
fn sub_digits(a: &[u8], b: &[u8]) -> Vec<u8> {
    let mut out = vec![0u8; a.len()];
    let mut borrow = 0i8;
    for i in (0..a.len()).rev() {
        let mut v = a[i] as i8 - b[i] as i8 - borrow;
        borrow = 0;
        if v < 0 {
            v += 10;
            borrow = 1;
        }
        out[i] = v as u8;
    }
    out
}

/// `digits *= m` for a small `m`.
fn mul_small(digits: &mut Vec<u8>, m: u32) {
    let mut carry = 0u32;
    for d in digits.iter_mut().rev() {
        let v = u32::from(*d) * m + carry;
        *d = (v % 10) as u8;
        carry = v / 10;
    }
    while carry > 0 {
        digits.insert(0, (carry % 10) as u8);
        carry /= 10;
    }
}

/// `digits /= d` for a small `d`; returns the remainder.
fn div_small(digits: &mut Vec<u8>, d: u32) -> u32 {
    let mut rem = 0u32;
    for x in digits.iter_mut() {
        let v = rem * 10 + u32::from(*x);
        *x = (v / d) as u8;
        rem = v % d;
    }
    let lead = digits.iter().take_while(|x| **x == 0).count();
    digits.drain(..lead);
    rem
}

/// `digits += 1`.
fn add_one(digits: &mut Vec<u8>) {
    for d in digits.iter_mut().rev() {
        if *d == 9 {
            *d = 0;
        } else {
            *d += 1;
            return;
        }
    }
    digits.insert(0, 1);
}

/// Reads a quantity from JSON: a string, or a number as a YAML client sends `cpu: 0.5`.
/// `null` decodes as upstream's zero quantity.
pub(crate) fn from_json(value: &Value) -> Result<Quantity, QuantityError> {
    match value {
        Value::String(s) => Quantity::parse_json(s),
        Value::Number(n) => Quantity::parse_json(&n.to_string()),
        Value::Null => Ok(Quantity::zero(None)),
        _ => Err(QuantityError::Format),
    }
}

/// Rewrites one quantity value in place into upstream's serialization. Values of another
/// JSON type (objects, arrays, booleans) are left for schema decoding to refuse.
pub(crate) fn canonicalize_value(value: &mut Value) -> Result<(), QuantityError> {
    if matches!(value, Value::String(_) | Value::Number(_) | Value::Null) {
        *value = Value::String(from_json(value)?.canonical());
    }
    Ok(())
}

/// Rewrites every quantity of a resource list (`requests`, `limits`, `hard`: a map from
/// resource name to quantity) in place. A value that is not an object is left alone.
pub(crate) fn canonicalize_resource_list(list: &mut Value) -> Result<(), QuantityError> {
    if let Value::Object(map) = list {
        for value in map.values_mut() {
            canonicalize_value(value)?;
        }
    }
    Ok(())
}

/// The 400 upstream answers for an object holding a malformed quantity: it cannot be decoded.
pub(crate) fn undecodable(info: &ResourceInfo, err: QuantityError) -> ApiError {
    ApiError::bad_request(format!(
        "{kind} in version {version:?} cannot be handled as a {kind}: {err}",
        kind = info.kind,
        version = info.version,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn canon(s: &str) -> String {
        Quantity::parse(s)
            .map(|q| q.canonical())
            .unwrap_or_else(|e| format!("ERR {e}"))
    }

    #[test]
    fn whole_values_round_up_and_saturate() {
        let q = |s: &str| Quantity::parse(s).expect(s);
        assert_eq!(q("1Gi").ceil_i64(), 1 << 30);
        assert_eq!(q("1500m").ceil_i64(), 2);
        assert_eq!(q("-1500m").ceil_i64(), -1);
        assert_eq!(q("1n").ceil_i64(), 1);
        assert_eq!(q("0").ceil_i64(), 0);
        assert_eq!(q("12e30").ceil_i64(), i64::MAX);
        assert_eq!(
            Quantity::from_i64(3 << 30, Format::BinarySI).canonical(),
            "3Gi"
        );
        assert_eq!(Quantity::from_i64(-5, Format::DecimalSI).canonical(), "-5");
    }

    #[test]
    fn canonical_forms_match_upstream() {
        for (input, want) in [
            ("0", "0"),
            ("00", "0"),
            ("-0", "0"),
            ("0.5", "500m"),
            ("1.5", "1500m"),
            ("1000m", "1"),
            ("500m", "500m"),
            ("1024Mi", "1Gi"),
            ("1536Mi", "1536Mi"),
            ("1.5Gi", "1536Mi"),
            ("1Gi", "1Gi"),
            ("100Mi", "100Mi"),
            ("8Mi", "8Mi"),
            ("2048Ki", "2Mi"),
            ("2G", "2G"),
            ("2000M", "2G"),
            ("1000", "1k"),
            ("100", "100"),
            ("1e3", "1e3"),
            ("1E3", "1E3"),
            ("1.5e3", "1500"),
            ("100e6", "100e6"),
            ("1000e6", "1e9"),
            ("12e-2", "120e-3"),
            ("0.0001", "100u"),
            ("0.0000000001", "1n"),
            ("0.9n", "1n"),
            ("1.0000000001", "1000000001n"),
            ("-1", "-1"),
            ("-0.5", "-500m"),
            ("+1", "+1"),
            ("1000E", "1e21"),
            ("0.5Ki", "512"),
            ("1.1Ki", "1126400m"),
            ("1023", "1023"),
            ("512Ki", "512Ki"),
            ("0.5Mi", "512Ki"),
            ("8Ei", "9223372036854775807"),
            ("12345678901234567890Ki", "9223372036854775807"),
            ("-12345678901234567890Ki", "-9223372036854775807"),
            ("18446744073709551616", "18446744073709551616"),
            ("1.2345", "1234500u"),
            (".5", "500m"),
            ("1.", "1."),
            ("1.G", "1.G"),
            (".", "0"),
            ("1k", "1k"),
            ("1n", "1n"),
            ("10u", "10u"),
        ] {
            assert_eq!(canon(input), want, "canonical form of {input:?}");
        }
    }

    #[test]
    fn malformed_quantities_are_refused_with_upstream_messages() {
        let format = QuantityError::Format.to_string();
        let suffix = QuantityError::Suffix.to_string();
        assert_eq!(
            format,
            "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
        );
        for (input, want) in [
            ("", &format),
            ("abc", &format),
            ("1Gx", &format),
            ("1 ", &format),
            ("1e3.5", &format),
            ("1..2", &format),
            ("1KM", &suffix),
            ("1K", &suffix),
            ("1ki", &suffix),
            ("1e", &suffix),
            ("1ee3", &suffix),
            ("1i", &suffix),
        ] {
            assert_eq!(&canon(input), &format!("ERR {want}"), "{input:?}");
        }
        assert_eq!(Quantity::parse(".e-10").err(), Some(QuantityError::Numeric));
    }

    #[test]
    fn comparison_is_by_value() {
        let q = |s: &str| Quantity::parse(s).expect("valid");
        assert_eq!(q("1Gi").cmp(&q("1024Mi")), Ordering::Equal);
        assert_eq!(q("1").cmp(&q("1000m")), Ordering::Equal);
        assert_eq!(q("2").cmp(&q("1")), Ordering::Greater);
        assert_eq!(q("500m").cmp(&q("1")), Ordering::Less);
        assert_eq!(q("-1").cmp(&q("0")), Ordering::Less);
        assert_eq!(q("-2").cmp(&q("-1")), Ordering::Less);
        assert_eq!(q("1G").cmp(&q("1Gi")), Ordering::Less);
        assert_eq!(q("1e3").cmp(&q("1k")), Ordering::Equal);
        assert!(q("-1").is_negative());
        assert!(!q("-0").is_negative());
        assert!(q("0m").is_zero());
    }

    #[test]
    fn sums_are_exact() {
        let q = |s: &str| Quantity::parse(s).expect("valid");
        let sum = |a: &str, b: &str| q(a).checked_add(&q(b)).map(|s| s.canonical());
        assert_eq!(sum("500m", "0.5").as_deref(), Some("1"));
        assert_eq!(sum("1Gi", "512Mi").as_deref(), Some("1536Mi"));
        assert_eq!(sum("1", "-3").as_deref(), Some("-2"));
        assert_eq!(sum("-1", "1").as_deref(), Some("0"));
        assert_eq!(sum("0", "100Mi").as_deref(), Some("100Mi"));
        assert_eq!(sum("999m", "1m").as_deref(), Some("1"));
        assert_eq!(sum("1e2000", "1"), None);
    }

    #[test]
    fn resource_lists_are_canonicalized_in_place() {
        let mut list = json!({"cpu": "0.5", "memory": "1024Mi", "pods": 2, "x": 0.25, "n": null});
        canonicalize_resource_list(&mut list).expect("valid");
        assert_eq!(
            list,
            json!({"cpu": "500m", "memory": "1Gi", "pods": "2", "x": "250m", "n": "0"})
        );
        let mut bad = json!({"cpu": "lots"});
        assert_eq!(
            canonicalize_resource_list(&mut bad),
            Err(QuantityError::Format)
        );
        let mut padded = json!({"cpu": " 1000m "});
        canonicalize_resource_list(&mut padded).expect("valid");
        assert_eq!(padded, json!({"cpu": "1"}));
    }

    fn quantity_string() -> impl Strategy<Value = String> {
        (
            prop_oneof![Just(""), Just("-"), Just("+")],
            "[0-9]{0,20}",
            proptest::option::of("[0-9]{0,12}"),
            prop_oneof![
                Just(String::new()),
                proptest::sample::select(vec!["n", "u", "m", "k", "M", "G", "T", "P", "E"])
                    .prop_map(String::from),
                proptest::sample::select(vec!["Ki", "Mi", "Gi", "Ti", "Pi", "Ei"])
                    .prop_map(String::from),
                (-30i32..30).prop_map(|e| format!("e{e}")),
            ],
        )
            .prop_map(|(sign, int, frac, suffix)| {
                // A number needs a digit: "." or ".Pi" is not a quantity.
                let int = if int.is_empty() && frac.as_deref().is_none_or(str::is_empty) {
                    "1".to_string()
                } else {
                    int
                };
                match frac {
                    Some(f) => format!("{sign}{int}.{f}{suffix}"),
                    None => format!("{sign}{int}{suffix}"),
                }
            })
    }

    proptest! {
        #[test]
        fn canonical_form_reparses_to_the_same_value(s in quantity_string()) {
            let q = Quantity::parse(&s).expect("valid");
            let c = q.canonical();
            let again = Quantity::parse(&c).expect("valid");
            prop_assert!(again == q, "{s} -> {c} changed value");
            prop_assert_eq!(again.canonical(), c.clone(), "{} is not a fixpoint", c);
        }

        #[test]
        fn arbitrary_strings_never_panic(s in ".{0,24}") {
            let _ = Quantity::parse(&s).map(|q| q.canonical());
        }
    }
}
