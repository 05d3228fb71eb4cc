//! A small binary codec (LEB128 varints and length-prefixed strings) for
//! the on-disk index cache. Decoding never panics: truncated or corrupt
//! input yields [`CodecError`], and the caller rebuilds from the files.

/// Corrupt or truncated cache data.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("corrupt index cache: {0}")]
pub(crate) struct CodecError(pub &'static str);

/// Appends encoded values to a byte buffer.
#[derive(Default)]
pub(crate) struct Writer {
    pub buf: Vec<u8>,
}

impl Writer {
    pub(crate) fn u64(&mut self, mut v: u64) {
        loop {
            let byte = (v & 0x7f) as u8;
            v >>= 7;
            if v == 0 {
                self.buf.push(byte);
                return;
            }
            self.buf.push(byte | 0x80);
        }
    }

    pub(crate) fn i64(&mut self, v: i64) {
        self.u64(((v << 1) ^ (v >> 63)) as u64);
    }

    pub(crate) fn str(&mut self, s: &str) {
        self.u64(s.len() as u64);
        self.buf.extend_from_slice(s.as_bytes());
    }

    pub(crate) fn bytes(&mut self, b: &[u8]) {
        self.buf.extend_from_slice(b);
    }
}

/// Reads values written by [`Writer`].
pub(crate) struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }

    pub(crate) fn u64(&mut self) -> Result<u64, CodecError> {
        let mut value = 0u64;
        let mut shift = 0;
        loop {
            let byte = *self
                .buf
                .get(self.pos)
                .ok_or(CodecError("truncated varint"))?;
            self.pos += 1;
            if shift >= 64 {
                return Err(CodecError("varint overflow"));
            }
            value |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok(value);
            }
            shift += 7;
        }
    }

    pub(crate) fn u32(&mut self) -> Result<u32, CodecError> {
        u32::try_from(self.u64()?).map_err(|_| CodecError("value exceeds u32"))
    }

    pub(crate) fn i64(&mut self) -> Result<i64, CodecError> {
        let v = self.u64()?;
        Ok(((v >> 1) as i64) ^ -((v & 1) as i64))
    }

    /// A count of items that each take at least one byte (guards allocation).
    pub(crate) fn len(&mut self) -> Result<usize, CodecError> {
        let n = self.u64()? as usize;
        if n > self.buf.len().saturating_sub(self.pos) {
            return Err(CodecError("length exceeds data"));
        }
        Ok(n)
    }

    pub(crate) fn str(&mut self) -> Result<&'a str, CodecError> {
        let len = self.len()?;
        let bytes = self.take(len)?;
        std::str::from_utf8(bytes).map_err(|_| CodecError("invalid utf-8"))
    }

    pub(crate) fn take(&mut self, len: usize) -> Result<&'a [u8], CodecError> {
        let end = self.pos.checked_add(len).ok_or(CodecError("overflow"))?;
        let bytes = self.buf.get(self.pos..end).ok_or(CodecError("truncated"))?;
        self.pos = end;
        Ok(bytes)
    }

    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.pos >= self.buf.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_rejects_truncation() {
        let mut w = Writer::default();
        w.u64(300);
        w.i64(-5);
        w.str("入院");
        let mut r = Reader::new(&w.buf);
        assert_eq!(r.u64(), Ok(300));
        assert_eq!(r.i64(), Ok(-5));
        assert_eq!(r.str(), Ok("入院"));
        assert!(r.is_empty());
        let cut = &w.buf[..w.buf.len() - 1];
        let mut r = Reader::new(cut);
        let _ = r.u64();
        let _ = r.i64();
        assert!(r.str().is_err());
    }
}
