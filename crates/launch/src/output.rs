//! Forwarding of task output to the launcher's stdout and stderr.
//!
//! Output is forwarded a whole line at a time under one lock shared by
//! both streams, so lines of different tasks (or of stdout and stderr sent
//! to the same file) never mix mid-line. A line longer than [`MAX_LINE`]
//! is passed on in pieces rather than held without bound.

use std::io::{self, Read, Write};
use std::sync::mpsc::Sender;
use std::sync::Mutex;

/// Longest partial line held back waiting for its newline.
const MAX_LINE: usize = 64 << 10;

/// Serializes writes to stdout and stderr.
static OUTPUT: Mutex<()> = Mutex::new(());

/// Which of the launcher's streams to write to.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Stream {
    /// stdout.
    Out,
    /// stderr.
    Err,
}

/// Copies `src` to `stream` line by line, each line prefixed with `tag`
/// if given, until end of file; then reports on `done`.
pub(crate) fn forward(
    src: impl Read + Send + 'static,
    stream: Stream,
    tag: Option<String>,
    done: Sender<()>,
) -> io::Result<()> {
    std::thread::Builder::new()
        .name("sss-run-output".into())
        .spawn(move || {
            pump(
                src,
                |chunk| write(stream, chunk),
                tag.as_deref().unwrap_or(""),
            );
            let _ = done.send(());
        })
        .map(|_| ())
}

/// Prints a launcher message on stderr, `sss run: ` first, under the same
/// lock as task output so it never lands inside a task's line.
macro_rules! say {
    ($($arg:tt)*) => {
        $crate::output::say_line(&format!($($arg)*))
    };
}
pub(crate) use say;

/// The function behind [`say!`].
pub(crate) fn say_line(msg: &str) {
    write(Stream::Err, format!("sss run: {msg}\n").as_bytes());
}

fn write(stream: Stream, bytes: &[u8]) {
    let _guard = OUTPUT.lock().unwrap_or_else(|p| p.into_inner());
    // Write errors (a closed pipe, a full disk) must not stop the copy:
    // the task would then block on a full pipe. Its output is dropped.
    let _ = match stream {
        Stream::Out => {
            let mut o = io::stdout().lock();
            o.write_all(bytes).and_then(|_| o.flush())
        }
        Stream::Err => io::stderr().lock().write_all(bytes),
    };
}

/// The line splitter, separated from the I/O for tests: reads `src` and
/// calls `sink` with runs of complete, tagged lines.
fn pump(mut src: impl Read, mut sink: impl FnMut(&[u8]), tag: &str) {
    let mut buf = vec![0u8; 16 << 10];
    let mut pending: Vec<u8> = Vec::new();
    // False while the last emitted piece ended mid-line: its continuation
    // gets no tag.
    let mut at_line_start = true;
    let mut emit = |bytes: &[u8], at_line_start: &mut bool| {
        let mut out = Vec::with_capacity(bytes.len() + tag.len() * 4);
        for line in bytes.split_inclusive(|b| *b == b'\n') {
            if *at_line_start {
                out.extend_from_slice(tag.as_bytes());
            }
            out.extend_from_slice(line);
            *at_line_start = line.ends_with(b"\n");
        }
        sink(&out);
    };
    loop {
        let n = match src.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        pending.extend_from_slice(&buf[..n]);
        if let Some(last) = pending.iter().rposition(|b| *b == b'\n') {
            let rest = pending.split_off(last + 1);
            emit(&pending, &mut at_line_start);
            pending = rest;
        }
        if pending.len() >= MAX_LINE {
            emit(&pending, &mut at_line_start);
            pending.clear();
        }
    }
    if !pending.is_empty() {
        // A last line without newline: end it, so the next task's tagged
        // line starts on a line of its own.
        if !tag.is_empty() {
            pending.push(b'\n');
        }
        emit(&pending, &mut at_line_start);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reader that returns its chunks one `read` at a time.
    struct Chunks(Vec<Vec<u8>>);
    impl Read for Chunks {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            if self.0.is_empty() {
                return Ok(0);
            }
            let c = self.0.remove(0);
            buf[..c.len()].copy_from_slice(&c);
            Ok(c.len())
        }
    }

    fn run(chunks: &[&str], tag: &str) -> Vec<String> {
        let src = Chunks(chunks.iter().map(|c| c.as_bytes().to_vec()).collect());
        let mut out = Vec::new();
        pump(
            src,
            |b| out.push(String::from_utf8_lossy(b).into_owned()),
            tag,
        );
        out
    }

    #[test]
    fn whole_lines_only_and_tags() {
        let out = run(&["he", "llo\nwor", "ld\n", "tail"], "[3] ");
        assert_eq!(out, ["[3] hello\n", "[3] world\n", "[3] tail\n"]);
    }

    #[test]
    fn untagged_output_is_unchanged() {
        let out = run(&["a\nb", "c\n", "d"], "");
        assert_eq!(out.concat(), "a\nbc\nd");
        assert_eq!(out[0], "a\n");
    }

    #[test]
    fn long_lines_are_split_and_tagged_once() {
        let long = "x".repeat(MAX_LINE + 10);
        let mut chunks: Vec<&str> = long
            .as_bytes()
            .chunks(16 << 10)
            .map(|c| std::str::from_utf8(c).unwrap())
            .collect();
        chunks.push("\nnext\n");
        let out = run(&chunks, "[0] ").concat();
        assert_eq!(out, format!("[0] {long}\n[0] next\n"));
    }
}
