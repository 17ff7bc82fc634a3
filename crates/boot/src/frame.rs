//! Framing of the TCP rendezvous (layout in the crate docs).
//!
//! Public only so the fuzz targets (`fuzz/`) can reach the decoders; not
//! part of the crate's API.

use std::io::{self, Read, Write};

/// First bytes of a HELLO body.
pub const MAGIC: [u8; 4] = *b"SSSB";
/// Protocol version in a HELLO.
pub const VERSION: u8 = 2;

/// Frame kind: task to server, first frame.
pub const HELLO: u8 = 1;
/// Frame kind: server to task, the HELLO was accepted.
pub const WELCOME: u8 = 2;
/// Frame kind: task to server, one contribution.
pub const ROUND: u8 = 3;
/// Frame kind: server to task, every contribution of a round.
pub const GATHERED: u8 = 4;
/// Frame kind: server to task, a refusal with its reason.
pub const ERROR: u8 = 5;
/// Frame kind: server to task, first frame: the nonce the HELLO's tag
/// covers.
pub const CHALLENGE: u8 = 6;

/// Largest frame the server reads: one contribution plus its header.
pub const MAX_TO_SERVER: u64 = crate::MAX_CONTRIBUTION as u64 + 16;
/// Largest frame a task reads: everybody's contributions. A sanity bound,
/// not a policy: it only stops a corrupt length from allocating wildly.
pub const MAX_TO_TASK: u64 = 1 << 36;

/// A frame's kind and body.
pub struct Frame {
    /// The frame kind.
    pub kind: u8,
    /// The bytes after the kind.
    pub body: Vec<u8>,
}

/// Writes one frame.
pub fn write_frame(w: &mut impl Write, kind: u8, body: &[u8]) -> io::Result<()> {
    let mut head = [0u8; 9];
    head[..8].copy_from_slice(&(body.len() as u64 + 1).to_le_bytes());
    head[8] = kind;
    w.write_all(&head)?;
    w.write_all(body)?;
    w.flush()
}

/// Reads one frame of at most `max` bytes (kind included).
pub fn read_frame(r: &mut impl Read, max: u64) -> io::Result<Frame> {
    let mut len = [0u8; 8];
    r.read_exact(&mut len)?;
    let len = u64::from_le_bytes(len);
    if len == 0 || len > max {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("frame length {len} outside 1..={max}"),
        ));
    }
    let mut kind = [0u8; 1];
    r.read_exact(&mut kind)?;
    let body_len = usize::try_from(len - 1)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "frame too large"))?;
    let mut body = Vec::new();
    // `take` + `read_to_end` grows the buffer as bytes arrive instead of
    // trusting the length for one big allocation up front.
    r.take(len - 1).read_to_end(&mut body)?;
    if body.len() != body_len {
        return Err(io::ErrorKind::UnexpectedEof.into());
    }
    Ok(Frame {
        kind: kind[0],
        body,
    })
}

const HELLO_LEN: usize = 17 + crate::auth::SECRET_LEN;

/// The HELLO body.
pub fn hello(job: u32, rank: u32, size: u32, tag: &[u8; crate::auth::SECRET_LEN]) -> Vec<u8> {
    let mut b = Vec::with_capacity(HELLO_LEN);
    b.extend_from_slice(&MAGIC);
    b.push(VERSION);
    b.extend_from_slice(&job.to_le_bytes());
    b.extend_from_slice(&rank.to_le_bytes());
    b.extend_from_slice(&size.to_le_bytes());
    b.extend_from_slice(tag);
    b
}

/// A parsed HELLO.
#[derive(Debug, PartialEq, Eq)]
pub struct Hello {
    /// Job id.
    pub job: u32,
    /// The task's rank.
    pub rank: u32,
    /// Tasks in the job.
    pub size: u32,
    /// Proof of the job secret (all zero without one).
    pub tag: [u8; crate::auth::SECRET_LEN],
}

/// Parses a HELLO body.
pub fn parse_hello(b: &[u8]) -> Result<Hello, String> {
    if b.len() < 5 || b[..4] != MAGIC {
        return Err("not an SSS boot hello".into());
    }
    if b[4] != VERSION {
        return Err(format!(
            "boot protocol version {} not supported (this server speaks {VERSION})",
            b[4]
        ));
    }
    if b.len() != HELLO_LEN {
        return Err("not an SSS boot hello".into());
    }
    let mut tag = [0u8; crate::auth::SECRET_LEN];
    tag.copy_from_slice(&b[17..]);
    Ok(Hello {
        job: le32(&b[5..9]),
        rank: le32(&b[9..13]),
        size: le32(&b[13..17]),
        tag,
    })
}

/// The ROUND body.
pub fn round(round: u32, data: &[u8]) -> Vec<u8> {
    let mut b = Vec::with_capacity(4 + data.len());
    b.extend_from_slice(&round.to_le_bytes());
    b.extend_from_slice(data);
    b
}

/// Splits a ROUND body into round number and data.
pub fn parse_round(b: &[u8]) -> Result<(u32, &[u8]), String> {
    if b.len() < 4 {
        return Err("short ROUND frame".into());
    }
    Ok((le32(&b[..4]), &b[4..]))
}

/// The GATHERED body for `parts`, indexed by rank.
pub fn gathered<'a>(round: u32, parts: impl ExactSizeIterator<Item = &'a [u8]>) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend_from_slice(&round.to_le_bytes());
    b.extend_from_slice(&(parts.len() as u32).to_le_bytes());
    for p in parts {
        b.extend_from_slice(&(p.len() as u32).to_le_bytes());
        b.extend_from_slice(p);
    }
    b
}

/// Parses a GATHERED body; checks every length before slicing.
pub fn parse_gathered(b: &[u8]) -> Result<(u32, Vec<Vec<u8>>), String> {
    if b.len() < 8 {
        return Err("short GATHERED frame".into());
    }
    let round = le32(&b[..4]);
    let count = le32(&b[4..8]) as usize;
    let mut rest = &b[8..];
    // Every part needs at least its 4-byte length, which bounds the count.
    if count > rest.len() / 4 {
        return Err(format!("GATHERED frame claims {count} parts"));
    }
    let mut out = Vec::with_capacity(count);
    for i in 0..count {
        if rest.len() < 4 {
            return Err(format!("GATHERED frame truncated at part {i}"));
        }
        let len = le32(&rest[..4]) as usize;
        rest = &rest[4..];
        if rest.len() < len {
            return Err(format!("GATHERED frame truncated in part {i}"));
        }
        out.push(rest[..len].to_vec());
        rest = &rest[len..];
    }
    if !rest.is_empty() {
        return Err("trailing bytes after GATHERED parts".into());
    }
    Ok((round, out))
}

fn le32(b: &[u8]) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[..4]);
    u32::from_le_bytes(a)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hello_round_trip() {
        let h = parse_hello(&hello(7, 2, 4, &[9; 32])).unwrap();
        assert_eq!(
            h,
            Hello {
                job: 7,
                rank: 2,
                size: 4,
                tag: [9; 32]
            }
        );
        let mut bad = hello(7, 2, 4, &[0; 32]);
        bad[4] = 9;
        assert!(parse_hello(&bad).unwrap_err().contains("version 9"));
        assert!(parse_hello(b"junk").is_err());
    }

    #[test]
    fn gathered_round_trip_and_truncation() {
        let parts: Vec<&[u8]> = vec![b"a", b"", b"xyz"];
        let b = gathered(3, parts.iter().copied());
        let (r, got) = parse_gathered(&b).unwrap();
        assert_eq!(r, 3);
        assert_eq!(got, vec![b"a".to_vec(), vec![], b"xyz".to_vec()]);
        for cut in 0..b.len() {
            assert!(parse_gathered(&b[..cut]).is_err(), "cut at {cut}");
        }
        let mut huge = b.clone();
        huge[4..8].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(parse_gathered(&huge).is_err());
    }

    #[test]
    fn frames_round_trip_and_bound() {
        let mut buf = Vec::new();
        write_frame(&mut buf, ROUND, &round(1, b"hi")).unwrap();
        let f = read_frame(&mut &buf[..], 100).unwrap();
        assert_eq!(f.kind, ROUND);
        assert_eq!(parse_round(&f.body).unwrap(), (1, &b"hi"[..]));
        assert!(read_frame(&mut &buf[..], 3).is_err());
        assert!(read_frame(&mut &buf[..buf.len() - 1], 100).is_err());
    }
}
