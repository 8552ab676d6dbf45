//! Streaming decoding of a compressed response body that the HTML rewriter
//! is about to rewrite: `gzip` (RFC 1952, several members allowed),
//! `deflate` (RFC 1950 zlib, or a bare RFC 1951 stream as some servers send)
//! and `br` (RFC 7932), the codings of RFC 9110 section 8.4.1.
//!
//! The decoder hands out its output in pieces of at most [`PIECE`] bytes,
//! so the caller feeds one piece to the rewriter before the next one is
//! produced, and it enforces the limits below: a body that breaks one is an
//! error, never a larger allocation.

use bytes::{Bytes, BytesMut};
use flate2::{Crc, Decompress, FlushDecompress, Status};

/// Most decoded bytes produced in one step: the rewriter sees the body in
/// slices of this size, whatever a compressed chunk expands to.
pub const PIECE: usize = 64 << 10;

/// Most decoded bytes of one response. An HTML page anywhere near this is
/// far past what a crawler or a browser renders; the cap bounds the CPU one
/// response can cost (every decoded byte goes through the rewriter).
pub const MAX_DECODED: u64 = 64 << 20;

/// Most decoded bytes per compressed byte, past [`RATIO_SLACK`]. Real HTML
/// compresses 4 to 20 times with gzip or brotli; a body expanding 100 times
/// is a decompression bomb (zeros reach about 1000 with deflate, far more
/// with brotli). The ratio is checked over the body so far, and over what
/// each received chunk decodes to: the second bounds the bytes one call of
/// the body filter holds (about 100 x 64 KiB + 1 MiB for Pingora's 64 KiB
/// reads).
pub const MAX_RATIO: u64 = 100;

/// Decoded bytes allowed beyond the ratio: a small page may compress very
/// well (a short, repetitive document), and a stream's first bytes can
/// decode to more than the ratio before the rest arrives.
pub const RATIO_SLACK: u64 = 1 << 20;

/// A content coding this module decodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    /// `gzip` and `x-gzip` (RFC 9110 section 8.4.1.3).
    Gzip,
    /// `deflate` (RFC 9110 section 8.4.1.2).
    Deflate,
    /// `br` (RFC 7932).
    Brotli,
}

impl Encoding {
    /// The coding named by one Content-Encoding field value, or `None` for
    /// any other value: unknown codings, and several codings applied in a
    /// row (`gzip, br`), which are not decoded.
    pub fn from_header(value: &[u8]) -> Option<Encoding> {
        let value = std::str::from_utf8(value).ok()?.trim();
        if value.eq_ignore_ascii_case("gzip") || value.eq_ignore_ascii_case("x-gzip") {
            Some(Encoding::Gzip)
        } else if value.eq_ignore_ascii_case("deflate") {
            Some(Encoding::Deflate)
        } else if value.eq_ignore_ascii_case("br") {
            Some(Encoding::Brotli)
        } else {
            None
        }
    }

    /// The coding's name, for logs.
    pub fn name(self) -> &'static str {
        match self {
            Encoding::Gzip => "gzip",
            Encoding::Deflate => "deflate",
            Encoding::Brotli => "br",
        }
    }
}

/// Why a body cannot be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// Past [`Limits::max_decoded`].
    #[error("decoded body exceeds {limit} bytes")]
    Size {
        /// The limit.
        limit: u64,
    },
    /// Past [`Limits::ratio`] times the compressed bytes plus the slack.
    #[error("{decoded} bytes decoded from {compressed} compressed bytes (limit {ratio} per byte + {slack})")]
    Ratio {
        /// Decoded bytes (of the body, or of one chunk).
        decoded: u64,
        /// Compressed bytes they came from.
        compressed: u64,
        /// The ratio limit.
        ratio: u64,
        /// The slack.
        slack: u64,
    },
    /// Not a valid stream of the coding, or cut short.
    #[error("invalid {encoding} data: {reason}")]
    Invalid {
        /// The coding.
        encoding: &'static str,
        /// What is wrong.
        reason: String,
    },
}

impl DecodeError {
    /// `size`, `ratio` or `invalid`: the metric label.
    pub fn reason(&self) -> &'static str {
        match self {
            DecodeError::Size { .. } => "size",
            DecodeError::Ratio { .. } => "ratio",
            DecodeError::Invalid { .. } => "invalid",
        }
    }
}

/// The limits one decoder enforces.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// [`MAX_DECODED`].
    pub max_decoded: u64,
    /// [`MAX_RATIO`].
    pub ratio: u64,
    /// [`RATIO_SLACK`].
    pub slack: u64,
    /// [`PIECE`].
    pub piece: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits { max_decoded: MAX_DECODED, ratio: MAX_RATIO, slack: RATIO_SLACK, piece: PIECE }
    }
}

/// Streaming decoder for one response body.
///
/// [`Decoder::push`] a received chunk, then call [`Decoder::next_piece`]
/// until it returns `None` (it has used the chunk up), and
/// [`Decoder::finish`] at the end of the body.
pub struct Decoder {
    codec: Codec,
    encoding: Encoding,
    /// Received bytes not yet decoded.
    input: Bytes,
    /// Compressed bytes received, in total and in the latest chunk.
    compressed: u64,
    chunk_compressed: u64,
    /// Decoded bytes handed out, in total and since the latest chunk.
    decoded: u64,
    chunk_decoded: u64,
    limits: Limits,
}

enum Codec {
    Gzip(Box<Gzip>),
    /// `None` until the first two bytes tell zlib from a bare stream.
    Deflate(Option<Box<Decompress>>),
    Brotli(Box<Brotli>),
    /// The stream ended; what follows it is ignored (browsers ignore it too).
    Done,
}

type BrotliState =
    brotli::BrotliState<brotli::HeapAlloc<u8>, brotli::HeapAlloc<u32>, brotli::HeapAlloc<brotli::HuffmanCode>>;

struct Brotli(BrotliState);

struct Gzip {
    state: GzState,
    inflate: Decompress,
    crc: Crc,
}

enum GzState {
    Header(GzHeader),
    Body,
    /// CRC-32 and ISIZE (RFC 1952 section 2.3.1) collected so far.
    Trailer([u8; 8], usize),
    /// After a member: another member or the end.
    Between,
}

/// RFC 1952 section 2.3 header fields, parsed one byte at a time so a
/// header split across chunks needs no buffer.
#[derive(Default)]
struct GzHeader {
    /// Bytes of the fixed 10-byte part seen.
    fixed: usize,
    flags: u8,
    stage: HeaderStage,
}

#[derive(Default, Clone, Copy, PartialEq, Eq)]
enum HeaderStage {
    #[default]
    Fixed,
    /// XLEN: low byte seen (`Some`) or not.
    ExtraLen(Option<u8>),
    Extra(u16),
    Name,
    Comment,
    HeaderCrc(u8),
    Done,
}

const FHCRC: u8 = 0x02;
const FEXTRA: u8 = 0x04;
const FNAME: u8 = 0x08;
const FCOMMENT: u8 = 0x10;

impl GzHeader {
    /// The stage after `stage` given the flags.
    fn after(&self, stage: HeaderStage) -> HeaderStage {
        let order = [
            (FEXTRA, HeaderStage::ExtraLen(None)),
            (FNAME, HeaderStage::Name),
            (FCOMMENT, HeaderStage::Comment),
            (FHCRC, HeaderStage::HeaderCrc(2)),
        ];
        let from = match stage {
            HeaderStage::Fixed => 0,
            HeaderStage::ExtraLen(_) | HeaderStage::Extra(_) => 1,
            HeaderStage::Name => 2,
            HeaderStage::Comment => 3,
            HeaderStage::HeaderCrc(_) | HeaderStage::Done => 4,
        };
        order[from..].iter().find(|(flag, _)| self.flags & flag != 0).map(|(_, s)| *s).unwrap_or(HeaderStage::Done)
    }

    /// Consumes header bytes from `input`; returns how many, or an error.
    fn feed(&mut self, input: &[u8]) -> Result<usize, String> {
        let mut used = 0;
        for &b in input {
            if self.stage == HeaderStage::Done {
                break;
            }
            used += 1;
            self.stage = match self.stage {
                HeaderStage::Fixed => {
                    match (self.fixed, b) {
                        (0, 0x1f) | (1, 0x8b) | (2, 8) | (4..=9, _) => {}
                        (3, flags) if flags & 0xe0 == 0 => self.flags = flags,
                        (3, _) => return Err("reserved header flags set".into()),
                        (2, _) => return Err("compression method is not deflate".into()),
                        _ => return Err("not a gzip header".into()),
                    }
                    self.fixed += 1;
                    if self.fixed < 10 {
                        HeaderStage::Fixed
                    } else {
                        self.after(HeaderStage::Fixed)
                    }
                }
                HeaderStage::ExtraLen(None) => HeaderStage::ExtraLen(Some(b)),
                HeaderStage::ExtraLen(Some(lo)) => match u16::from_le_bytes([lo, b]) {
                    0 => self.after(HeaderStage::Extra(0)),
                    n => HeaderStage::Extra(n),
                },
                HeaderStage::Extra(n) if n > 1 => HeaderStage::Extra(n - 1),
                HeaderStage::Extra(_) => self.after(HeaderStage::Extra(0)),
                HeaderStage::Name if b != 0 => HeaderStage::Name,
                HeaderStage::Comment if b != 0 => HeaderStage::Comment,
                s @ (HeaderStage::Name | HeaderStage::Comment) => self.after(s),
                HeaderStage::HeaderCrc(n) if n > 1 => HeaderStage::HeaderCrc(n - 1),
                HeaderStage::HeaderCrc(_) => HeaderStage::Done,
                HeaderStage::Done => HeaderStage::Done,
            };
        }
        Ok(used)
    }
}

/// What one decoding step did.
struct Step {
    consumed: usize,
    produced: usize,
}

impl Decoder {
    /// A decoder for `encoding` with the default [`Limits`].
    pub fn new(encoding: Encoding) -> Decoder {
        Decoder::with_limits(encoding, Limits::default())
    }

    /// A decoder with explicit limits.
    pub fn with_limits(encoding: Encoding, limits: Limits) -> Decoder {
        let codec = match encoding {
            Encoding::Gzip => Codec::Gzip(Box::new(Gzip {
                state: GzState::Header(GzHeader::default()),
                inflate: Decompress::new(false),
                crc: Crc::new(),
            })),
            Encoding::Deflate => Codec::Deflate(None),
            // RFC 7932 only: the "large window" extension (windows up to
            // 1 GiB) is not an HTTP content coding.
            Encoding::Brotli => Codec::Brotli(Box::new(Brotli(BrotliState::new_strict(
                brotli::HeapAlloc::default(),
                brotli::HeapAlloc::default(),
                brotli::HeapAlloc::default(),
            )))),
        };
        Decoder {
            codec,
            encoding,
            input: Bytes::new(),
            compressed: 0,
            chunk_compressed: 0,
            decoded: 0,
            chunk_decoded: 0,
            limits,
        }
    }

    /// Adds a received chunk of the compressed body.
    pub fn push(&mut self, chunk: Bytes) {
        self.compressed += chunk.len() as u64;
        self.chunk_compressed = chunk.len() as u64;
        self.chunk_decoded = 0;
        self.input = if self.input.is_empty() {
            chunk
        } else {
            // Only a deflate body whose first chunk was a single byte
            // leaves input behind.
            let mut joined = BytesMut::with_capacity(self.input.len() + chunk.len());
            joined.extend_from_slice(&self.input);
            joined.extend_from_slice(&chunk);
            joined.freeze()
        };
    }

    /// The next piece of decoded output (at most [`Limits::piece`] bytes),
    /// or `None` when the input pushed so far is used up.
    pub fn next_piece(&mut self) -> Result<Option<Bytes>, DecodeError> {
        let mut out = vec![0u8; self.limits.piece];
        let mut filled = 0;
        while filled < out.len() {
            let step = self.step(&mut out[filled..])?;
            self.input = self.input.slice(step.consumed..);
            filled += step.produced;
            if step.consumed == 0 && step.produced == 0 {
                break;
            }
        }
        if filled == 0 {
            return Ok(None);
        }
        out.truncate(filled);
        self.account(filled as u64)?;
        Ok(Some(Bytes::from(out)))
    }

    /// End of the compressed body: an error when the stream is cut short.
    /// An empty body is accepted (servers label empty bodies too).
    pub fn finish(&mut self) -> Result<(), DecodeError> {
        let complete = match &self.codec {
            Codec::Done => true,
            Codec::Gzip(gz) => matches!(gz.state, GzState::Between),
            Codec::Deflate(_) | Codec::Brotli(_) => false,
        };
        if complete || self.compressed == 0 {
            Ok(())
        } else {
            Err(invalid(self.encoding, "the stream is cut short"))
        }
    }

    fn account(&mut self, n: u64) -> Result<(), DecodeError> {
        self.decoded += n;
        self.chunk_decoded += n;
        let Limits { max_decoded, ratio, slack, .. } = self.limits;
        if self.decoded > max_decoded {
            return Err(DecodeError::Size { limit: max_decoded });
        }
        for (decoded, compressed) in [(self.decoded, self.compressed), (self.chunk_decoded, self.chunk_compressed)] {
            if decoded > compressed.saturating_mul(ratio).saturating_add(slack) {
                return Err(DecodeError::Ratio { decoded, compressed, ratio, slack });
            }
        }
        Ok(())
    }

    /// Decodes what it can of `self.input` into `out`. No bytes consumed
    /// and none produced means it needs more input.
    fn step(&mut self, out: &mut [u8]) -> Result<Step, DecodeError> {
        let input = &self.input[..];
        let encoding = self.encoding;
        let invalid = |reason: String| invalid(encoding, reason);
        let none = Step { consumed: 0, produced: 0 };
        match &mut self.codec {
            Codec::Done => Ok(Step { consumed: input.len(), produced: 0 }),
            Codec::Deflate(inflate) => {
                let inflate = match inflate {
                    Some(i) => i,
                    None => {
                        let [a, b, ..] = *input else { return Ok(none) };
                        // RFC 1950 section 2.2: CM = 8 and a header that is a
                        // multiple of 31; anything else is taken as bare
                        // deflate.
                        let zlib = a & 0x0f == 8 && u16::from_be_bytes([a, b]) % 31 == 0;
                        inflate.insert(Box::new(Decompress::new(zlib)))
                    }
                };
                let (step, end) = inflate_step(inflate, input, out).map_err(invalid)?;
                if end {
                    self.codec = Codec::Done;
                }
                Ok(step)
            }
            Codec::Gzip(gz) => {
                let step = match &mut gz.state {
                    GzState::Header(h) => {
                        let consumed = h.feed(input).map_err(invalid)?;
                        if h.stage == HeaderStage::Done {
                            gz.state = GzState::Body;
                        }
                        Step { consumed, produced: 0 }
                    }
                    GzState::Body => {
                        let (step, end) = inflate_step(&mut gz.inflate, input, out).map_err(invalid)?;
                        gz.crc.update(&out[..step.produced]);
                        if end {
                            gz.state = GzState::Trailer([0; 8], 0);
                        }
                        step
                    }
                    GzState::Trailer(buf, have) => {
                        let n = (8 - *have).min(input.len());
                        buf[*have..*have + n].copy_from_slice(&input[..n]);
                        *have += n;
                        if *have == 8 {
                            let crc = u32::from_le_bytes([buf[0], buf[1], buf[2], buf[3]]);
                            let size = u32::from_le_bytes([buf[4], buf[5], buf[6], buf[7]]);
                            if crc != gz.crc.sum() || size != gz.crc.amount() {
                                return Err(invalid("CRC-32 or length of a member does not match".into()));
                            }
                            gz.state = GzState::Between;
                        }
                        Step { consumed: n, produced: 0 }
                    }
                    GzState::Between => match input.first() {
                        None => none,
                        // RFC 1952 section 2.2: a gzip file is a series of
                        // members.
                        Some(0x1f) => {
                            gz.inflate.reset(false);
                            gz.crc.reset();
                            let mut header = GzHeader::default();
                            let consumed = header.feed(input).map_err(invalid)?;
                            gz.state =
                                if header.stage == HeaderStage::Done { GzState::Body } else { GzState::Header(header) };
                            Step { consumed, produced: 0 }
                        }
                        Some(_) => {
                            self.codec = Codec::Done;
                            Step { consumed: input.len(), produced: 0 }
                        }
                    },
                };
                Ok(step)
            }
            Codec::Brotli(br) => {
                let (mut avail_in, mut in_offset) = (input.len(), 0);
                let (mut avail_out, mut out_offset, mut total) = (out.len(), 0, 0);
                let result = brotli::BrotliDecompressStream(
                    &mut avail_in,
                    &mut in_offset,
                    input,
                    &mut avail_out,
                    &mut out_offset,
                    out,
                    &mut total,
                    &mut br.0,
                );
                let step = Step { consumed: in_offset, produced: out_offset };
                match result {
                    brotli::BrotliResult::ResultSuccess => {
                        self.codec = Codec::Done;
                        Ok(step)
                    }
                    brotli::BrotliResult::NeedsMoreInput | brotli::BrotliResult::NeedsMoreOutput => Ok(step),
                    brotli::BrotliResult::ResultFailure => Err(invalid("corrupt brotli stream".into())),
                }
            }
        }
    }
}

fn invalid(encoding: Encoding, reason: impl Into<String>) -> DecodeError {
    DecodeError::Invalid { encoding: encoding.name(), reason: reason.into() }
}

/// One inflate call; `true` at the end of the deflate stream.
fn inflate_step(inflate: &mut Decompress, input: &[u8], out: &mut [u8]) -> Result<(Step, bool), String> {
    let (before_in, before_out) = (inflate.total_in(), inflate.total_out());
    let status = inflate.decompress(input, out, FlushDecompress::None).map_err(|e| e.to_string())?;
    let step = Step {
        consumed: (inflate.total_in() - before_in) as usize,
        produced: (inflate.total_out() - before_out) as usize,
    };
    Ok((step, status == Status::StreamEnd))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::panic)]
    use super::{DecodeError, Decoder, Encoding, Limits};
    use bytes::Bytes;
    use crawlgate_testkit::chunks::{pieces, Cuts};
    use std::io::Write;

    fn sample() -> Vec<u8> {
        let mut page = b"<!doctype html><html><head><title>T</title></head><body>".to_vec();
        for i in 0..5_000 {
            page.extend_from_slice(
                format!("<p id=\"p{i}\">Paragraph {} of the page.</p>\n", i * 7919 % 10007).as_bytes(),
            );
        }
        page.extend_from_slice(b"</body></html>\n");
        page
    }

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    fn zlib(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    fn raw_deflate(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    fn brotli(data: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        {
            let mut w = brotli::CompressorWriter::new(&mut out, 4096, 5, 22);
            w.write_all(data).unwrap();
        }
        out
    }

    /// Decodes `data` pushed in the given chunk sizes (an empty chunk too,
    /// as the body filter may push one); every piece must be within the
    /// piece size.
    fn decode(enc: Encoding, limits: Limits, data: &[u8], sizes: &[usize]) -> Result<Vec<u8>, DecodeError> {
        let mut d = Decoder::with_limits(enc, limits);
        let mut out = Vec::new();
        let mut pos = 0;
        for &n in sizes.iter().chain(std::iter::repeat(&usize::MAX)) {
            if pos >= data.len() {
                break;
            }
            let end = pos.saturating_add(n).min(data.len());
            d.push(Bytes::copy_from_slice(&data[pos..end]));
            pos = end;
            while let Some(piece) = d.next_piece()? {
                assert!(!piece.is_empty() && piece.len() <= limits.piece, "piece of {} bytes", piece.len());
                out.extend_from_slice(&piece);
            }
        }
        d.finish()?;
        Ok(out)
    }

    fn small_pieces() -> Limits {
        Limits { piece: 1000, ..Limits::default() }
    }

    #[test]
    fn random_chunkings_decode_exactly() {
        let page = sample();
        let cases = [
            (Encoding::Gzip, gzip(&page)),
            (Encoding::Deflate, zlib(&page)),
            (Encoding::Deflate, raw_deflate(&page)),
            (Encoding::Brotli, brotli(&page)),
        ];
        for (enc, data) in &cases {
            for seed in 1..=25u64 {
                let cuts = Cuts::new(seed).random(data.len());
                let sizes: Vec<usize> = pieces(data, &cuts).map(<[u8]>::len).collect();
                let got =
                    decode(*enc, small_pieces(), data, &sizes).unwrap_or_else(|e| panic!("{enc:?} seed {seed}: {e}"));
                assert!(got == page, "{enc:?} seed {seed}: {} bytes decoded, {} expected", got.len(), page.len());
            }
        }
    }

    #[test]
    fn gzip_members_header_fields_and_trailing_bytes() {
        // Two members, the second with FEXTRA, FNAME, FCOMMENT and FHCRC.
        let mut data = gzip(b"first member, ");
        let mut second = flate2::GzBuilder::new()
            .extra(vec![1, 2, 3])
            .filename("page.html")
            .comment("a comment")
            .write(Vec::new(), flate2::Compression::default());
        second.write_all(b"second member").unwrap();
        let second = second.finish().unwrap();
        // FHCRC: flag set by hand, two (unchecked) CRC bytes after the comment.
        let comment_end = second.len() - 8 - raw_deflate(b"second member").len();
        let mut hcrc = second[..comment_end].to_vec();
        hcrc[3] |= 0x02;
        hcrc.extend_from_slice(&[0xaa, 0xbb]);
        hcrc.extend_from_slice(&second[comment_end..]);
        data.extend_from_slice(&hcrc);
        let trailing = b"\0\0garbage after the last member";
        data.extend_from_slice(trailing);
        for size in [1, 2, 3, 5, 64] {
            let got = decode(Encoding::Gzip, small_pieces(), &data, &vec![size; data.len()])
                .unwrap_or_else(|e| panic!("chunks of {size}: {e}"));
            assert_eq!(String::from_utf8_lossy(&got), "first member, second member", "chunks of {size}");
        }
    }

    #[test]
    fn invalid_and_truncated_streams_are_errors() {
        let page = sample();
        let reason = |enc, data: &[u8]| decode(enc, small_pieces(), data, &[4096]).map_err(|e| e.reason());
        assert_eq!(reason(Encoding::Gzip, b"<!doctype html><p>not gzip</p>"), Err("invalid"));
        assert_eq!(reason(Encoding::Brotli, b"<!doctype html><p>not brotli</p>"), Err("invalid"));
        let gz = gzip(&page);
        assert_eq!(reason(Encoding::Gzip, &gz[..gz.len() / 2]), Err("invalid"));
        assert_eq!(reason(Encoding::Gzip, &gz[..gz.len() - 1]), Err("invalid"));
        let mut bad_crc = gz.clone();
        let n = bad_crc.len();
        bad_crc[n - 8] ^= 1;
        assert_eq!(reason(Encoding::Gzip, &bad_crc), Err("invalid"));
        let br = brotli(&page);
        assert_eq!(reason(Encoding::Brotli, &br[..br.len() / 2]), Err("invalid"));
        let z = zlib(&page);
        assert_eq!(reason(Encoding::Deflate, &z[..z.len() / 2]), Err("invalid"));
        // An empty body is no stream at all, and fine.
        assert_eq!(reason(Encoding::Gzip, b""), Ok(Vec::new()));
    }

    #[test]
    fn limits_stop_decoding_early() {
        let zeros = vec![0u8; 32 << 20];
        let bomb = gzip(&zeros);
        let limits = Limits::default();
        // The ratio trips within a few MiB: the output handed out before
        // the error is bounded by the slack and the ratio, not the bomb.
        let mut d = Decoder::with_limits(Encoding::Gzip, limits);
        let mut handed_out = 0u64;
        let mut err = None;
        'outer: for chunk in bomb.chunks(64 << 10) {
            d.push(Bytes::copy_from_slice(chunk));
            loop {
                match d.next_piece() {
                    Ok(Some(p)) => handed_out += p.len() as u64,
                    Ok(None) => break,
                    Err(e) => {
                        err = Some(e);
                        break 'outer;
                    }
                }
            }
        }
        let err = err.unwrap_or_else(|| panic!("bomb decoded whole: {handed_out} bytes"));
        assert_eq!(err.reason(), "ratio", "{err}");
        assert!(handed_out <= 100 * bomb.len() as u64 + (1 << 20), "{handed_out} bytes handed out");

        // Size: a body of ordinary ratio past a small cap.
        let page = sample();
        let size = Limits { max_decoded: 100_000, ..small_pieces() };
        assert_eq!(decode(Encoding::Brotli, size, &brotli(&page), &[4096]), Err(DecodeError::Size { limit: 100_000 }));
        // Per chunk: the chunk holding a run of zeros may not decode to
        // more than the ratio of that chunk plus the slack, even with
        // budget left over from the poorly compressed part before it.
        // 300,000 bytes that do not compress.
        let mut body = Cuts::new(7).bytes(300_000);
        body.extend_from_slice(&[0u8; 1 << 20]);
        let gz = gzip(&body);
        let tight = Limits { ratio: 10, slack: 10_000, ..small_pieces() };
        let got = decode(Encoding::Gzip, tight, &gz, &vec![64 << 10; gz.len()]);
        assert!(
            matches!(got, Err(DecodeError::Ratio { compressed, .. }) if compressed <= 64 << 10),
            "{:?}",
            got.map(|b| b.len())
        );
        // The whole body is within the ratio: in one piece it decodes.
        let whole = Limits { piece: 1 << 21, ..tight };
        assert_eq!(decode(Encoding::Gzip, whole, &gz, &[gz.len()]).map(|b| b.len()), Ok(body.len()));
    }

    #[test]
    fn content_encoding_values() {
        assert_eq!(Encoding::from_header(b"gzip"), Some(Encoding::Gzip));
        assert_eq!(Encoding::from_header(b" X-Gzip "), Some(Encoding::Gzip));
        assert_eq!(Encoding::from_header(b"deflate"), Some(Encoding::Deflate));
        assert_eq!(Encoding::from_header(b"BR"), Some(Encoding::Brotli));
        assert_eq!(Encoding::from_header(b"gzip, br"), None);
        assert_eq!(Encoding::from_header(b"zstd"), None);
        assert_eq!(Encoding::from_header(b"identity"), None);
    }
}
