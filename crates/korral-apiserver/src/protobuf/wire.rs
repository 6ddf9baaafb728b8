//! The protobuf wire format: varints, tags and length-delimited payloads, read from a slice
//! ([`Reader`]) or appended to a buffer (the `put_*` writers).
//!
//! Every read is bounds-checked; malformed input yields a [`ProtobufError`], never a panic.

use super::ProtobufError;

/// Largest field number protobuf allows (2^29 - 1).
const MAX_FIELD_NUMBER: u64 = (1 << 29) - 1;

/// One field's payload, by wire type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WireValue<'a> {
    /// Wire type 0.
    Varint(u64),
    /// Wire type 1 (little-endian, 8 bytes).
    Fixed64(u64),
    /// Wire type 2.
    Bytes(&'a [u8]),
    /// Wire type 5 (little-endian, 4 bytes).
    Fixed32(u32),
}

impl WireValue<'_> {
    /// The wire type number, for error messages.
    pub(crate) fn wire_type(&self) -> u8 {
        match self {
            WireValue::Varint(_) => 0,
            WireValue::Fixed64(_) => 1,
            WireValue::Bytes(_) => 2,
            WireValue::Fixed32(_) => 5,
        }
    }
}

/// A forward-only reader over an encoded message.
#[derive(Debug, Clone)]
pub(crate) struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    /// A reader at the start of `buf`.
    pub(crate) fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }

    /// Whether every byte has been consumed.
    pub(crate) fn at_end(&self) -> bool {
        self.pos >= self.buf.len()
    }

    /// Reads a base-128 varint of at most 10 bytes.
    pub(crate) fn read_varint(&mut self) -> Result<u64, ProtobufError> {
        let mut value: u64 = 0;
        for i in 0..10u32 {
            let byte = *self.buf.get(self.pos).ok_or(ProtobufError::Truncated)?;
            self.pos += 1;
            let bits = u64::from(byte & 0x7f);
            if i == 9 && byte > 1 {
                // The tenth byte may only carry the 64th bit.
                return Err(ProtobufError::VarintOverflow);
            }
            value |= bits << (7 * i);
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(ProtobufError::VarintOverflow)
    }

    /// Reads `n` raw bytes.
    fn read_slice(&mut self, n: u64) -> Result<&'a [u8], ProtobufError> {
        let remaining = self.buf.len() - self.pos.min(self.buf.len());
        let n = usize::try_from(n).map_err(|_| ProtobufError::LengthOutOfBounds)?;
        if n > remaining {
            return Err(ProtobufError::LengthOutOfBounds);
        }
        let start = self.pos;
        self.pos += n;
        self.buf
            .get(start..start + n)
            .ok_or(ProtobufError::LengthOutOfBounds)
    }

    /// Reads a little-endian 32-bit value.
    pub(crate) fn read_fixed32(&mut self) -> Result<u32, ProtobufError> {
        let bytes = self.read_slice(4).map_err(|_| ProtobufError::Truncated)?;
        let arr: [u8; 4] = bytes.try_into().map_err(|_| ProtobufError::Truncated)?;
        Ok(u32::from_le_bytes(arr))
    }

    /// Reads a little-endian 64-bit value.
    pub(crate) fn read_fixed64(&mut self) -> Result<u64, ProtobufError> {
        let bytes = self.read_slice(8).map_err(|_| ProtobufError::Truncated)?;
        let arr: [u8; 8] = bytes.try_into().map_err(|_| ProtobufError::Truncated)?;
        Ok(u64::from_le_bytes(arr))
    }

    /// Reads the next field: its number and payload. `None` at the end of the message.
    pub(crate) fn read_field(&mut self) -> Result<Option<(u32, WireValue<'a>)>, ProtobufError> {
        if self.at_end() {
            return Ok(None);
        }
        let key = self.read_varint()?;
        let number = key >> 3;
        let wire_type = (key & 7) as u8;
        if number == 0 || number > MAX_FIELD_NUMBER {
            return Err(ProtobufError::InvalidFieldNumber(number));
        }
        let number =
            u32::try_from(number).map_err(|_| ProtobufError::InvalidFieldNumber(number))?;
        let value = match wire_type {
            0 => WireValue::Varint(self.read_varint()?),
            1 => WireValue::Fixed64(self.read_fixed64()?),
            2 => {
                let len = self.read_varint()?;
                WireValue::Bytes(self.read_slice(len)?)
            }
            5 => WireValue::Fixed32(self.read_fixed32()?),
            other => {
                return Err(ProtobufError::UnsupportedWireType {
                    field: number,
                    wire_type: other,
                });
            }
        };
        Ok(Some((number, value)))
    }
}

/// Wire type of varints.
pub(crate) const VARINT: u8 = 0;
/// Wire type of 64-bit fixed values.
pub(crate) const FIXED64: u8 = 1;
/// Wire type of length-delimited payloads.
pub(crate) const LEN: u8 = 2;
/// Wire type of 32-bit fixed values.
pub(crate) const FIXED32: u8 = 5;

/// Appends `v` as a base-128 varint.
pub(crate) fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Appends the key of field `number` with `wire_type`.
pub(crate) fn put_key(out: &mut Vec<u8>, number: u32, wire_type: u8) {
    put_varint(out, (u64::from(number) << 3) | u64::from(wire_type));
}

/// Appends a varint field.
pub(crate) fn put_varint_field(out: &mut Vec<u8>, number: u32, v: u64) {
    put_key(out, number, VARINT);
    put_varint(out, v);
}

/// Appends a length-delimited field.
pub(crate) fn put_bytes_field(out: &mut Vec<u8>, number: u32, payload: &[u8]) {
    put_key(out, number, LEN);
    put_varint(out, payload.len() as u64);
    out.extend_from_slice(payload);
}

/// Appends a little-endian 32-bit field.
pub(crate) fn put_fixed32_field(out: &mut Vec<u8>, number: u32, v: u32) {
    put_key(out, number, FIXED32);
    out.extend_from_slice(&v.to_le_bytes());
}

/// Appends a little-endian 64-bit field.
pub(crate) fn put_fixed64_field(out: &mut Vec<u8>, number: u32, v: u64) {
    put_key(out, number, FIXED64);
    out.extend_from_slice(&v.to_le_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn written_values_read_back() {
        let mut out = Vec::new();
        for v in [0, 1, 127, 128, 300, u64::from(u32::MAX), u64::MAX] {
            put_varint(&mut out, v);
        }
        let mut r = Reader::new(&out);
        for v in [0, 1, 127, 128, 300, u64::from(u32::MAX), u64::MAX] {
            assert_eq!(r.read_varint().ok(), Some(v));
        }
        assert!(r.at_end());
        let mut out = Vec::new();
        put_varint_field(&mut out, 1, 150);
        put_bytes_field(&mut out, 2, b"hi");
        put_fixed32_field(&mut out, 3, 1);
        put_fixed64_field(&mut out, 4, 2);
        put_varint_field(&mut out, 1000, 0);
        let mut r = Reader::new(&out);
        assert_eq!(r.read_field().ok(), Some(Some((1, WireValue::Varint(150)))));
        assert_eq!(
            r.read_field().ok(),
            Some(Some((2, WireValue::Bytes(b"hi"))))
        );
        assert_eq!(r.read_field().ok(), Some(Some((3, WireValue::Fixed32(1)))));
        assert_eq!(r.read_field().ok(), Some(Some((4, WireValue::Fixed64(2)))));
        assert_eq!(
            r.read_field().ok(),
            Some(Some((1000, WireValue::Varint(0))))
        );
        assert_eq!(r.read_field().ok(), Some(None));
        // The bytes of the hand-written fixture of `fields` below.
        assert_eq!(&out[..3], &[0x08, 0x96, 0x01]);
    }

    #[test]
    fn varints() {
        let mut r = Reader::new(&[0x00, 0x01, 0xac, 0x02, 0xff, 0xff, 0xff, 0xff, 0x0f]);
        assert_eq!(r.read_varint().ok(), Some(0));
        assert_eq!(r.read_varint().ok(), Some(1));
        assert_eq!(r.read_varint().ok(), Some(300));
        assert_eq!(r.read_varint().ok(), Some(0xffff_ffff));
        assert!(r.at_end());
        let max = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01];
        assert_eq!(Reader::new(&max).read_varint().ok(), Some(u64::MAX));
    }

    #[test]
    fn bad_varints() {
        let over = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02];
        assert!(matches!(
            Reader::new(&over).read_varint(),
            Err(ProtobufError::VarintOverflow)
        ));
        let long = [0x80; 11];
        assert!(matches!(
            Reader::new(&long).read_varint(),
            Err(ProtobufError::VarintOverflow)
        ));
        assert!(matches!(
            Reader::new(&[0x80, 0x80]).read_varint(),
            Err(ProtobufError::Truncated)
        ));
    }

    #[test]
    fn fields() {
        // field 1 varint 150, field 2 "hi", field 3 fixed32, field 4 fixed64
        let bytes = [
            0x08, 0x96, 0x01, 0x12, 0x02, b'h', b'i', 0x1d, 1, 0, 0, 0, 0x21, 2, 0, 0, 0, 0, 0, 0,
            0,
        ];
        let mut r = Reader::new(&bytes);
        assert_eq!(r.read_field().ok(), Some(Some((1, WireValue::Varint(150)))));
        assert_eq!(
            r.read_field().ok(),
            Some(Some((2, WireValue::Bytes(b"hi"))))
        );
        assert_eq!(r.read_field().ok(), Some(Some((3, WireValue::Fixed32(1)))));
        assert_eq!(r.read_field().ok(), Some(Some((4, WireValue::Fixed64(2)))));
        assert_eq!(r.read_field().ok(), Some(None));
    }

    #[test]
    fn bad_fields() {
        // length past the end
        assert!(matches!(
            Reader::new(&[0x12, 0x05, b'a']).read_field(),
            Err(ProtobufError::LengthOutOfBounds)
        ));
        // huge length
        assert!(matches!(
            Reader::new(&[0x12, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f]).read_field(),
            Err(ProtobufError::LengthOutOfBounds)
        ));
        // field number 0
        assert!(matches!(
            Reader::new(&[0x00, 0x01]).read_field(),
            Err(ProtobufError::InvalidFieldNumber(0))
        ));
        // group wire types
        assert!(matches!(
            Reader::new(&[0x0b]).read_field(),
            Err(ProtobufError::UnsupportedWireType { .. })
        ));
        // truncated fixed
        assert!(matches!(
            Reader::new(&[0x0d, 1, 2]).read_field(),
            Err(ProtobufError::Truncated)
        ));
        // truncated key
        assert!(matches!(
            Reader::new(&[0x80]).read_field(),
            Err(ProtobufError::Truncated)
        ));
    }
}
