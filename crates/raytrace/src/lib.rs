//! The parallel ray tracer of SSS-CORE (seed paper 001, §7) on MBCF.
//!
//! One task is the *display*; the others are *workers*. The display owns
//! the frame buffer — an RGB8 image in an MBCF segment — and one
//! completion flag per worker in the same segment. The image is cut into
//! blocks of `--chunk` consecutive pixels (row-major); block `b` belongs to
//! worker `b mod W`. A worker renders each of its blocks and WRITEs the
//! block's bytes straight into the display's frame buffer, one one-sided
//! operation per block, with no receive code on the display side. Its last
//! WRITE carries a *notify* that bumps its completion flag after the data
//! (a worker without blocks bumps the flag with FETCH_ADD). Reliable
//! operations from one task to another apply in issue order, so a set flag
//! means every block of that worker has landed. The display waits for all
//! flags, writes a PNG and prints the time, a checksum of the pixels and a
//! table of packets, bytes and retransmissions per task.
//!
//! # Usage
//!
//! ```text
//! sss run -n 5 sss-raytrace [--width 640] [--height 480] [--chunk 64]
//!         [--samples 2] [--scene spheres|grid] [--out raytrace.png] [--quiet]
//! ```
//!
//! Rank 0 is the display and ranks `1..N` are the `N - 1` workers, so
//! **`-n 2` is the one-worker run, `-n 5` the four-worker run**. With
//! `-n 1` (or started without a launcher) rank 0 renders the whole image
//! itself into its own frame buffer: the sequential reference. Across
//! hosts, e.g. `sss run -n 5 --hosts 127.0.0.2,127.0.0.3 sss-raytrace`
//! (ranks 0–2 on the first node, 3–4 on the second), workers on another
//! node reach the display over udp;
//! `SSS_FAULT_DROP=0.1` makes every task drop a tenth of its outgoing
//! datagrams and the image must not change.
//!
//! The display prints, for example (four workers over two nodes):
//!
//! ```text
//! image 640x480, scene spheres, 2x2 samples, 4 workers, 64 pixels per block (4800 blocks, 192 bytes per WRITE)
//! time 0.179 s
//! checksum fnv1a64 44b835f7e7e60509
//! wrote two-hosts.png
//!
//! | task | node | role | blocks | time (s) | packets sent | bytes sent | retransmissions |
//! |---:|---|---|---:|---:|---:|---:|---:|
//! | 0 | 127.0.0.2 | display | 0 | 0.179 | 477 | 30528 | 0 |
//! | 1 | 127.0.0.2 | worker | 1200 | 0.116 | 0 | 0 | 0 |
//! | 2 | 127.0.0.2 | worker | 1200 | 0.171 | 0 | 0 | 0 |
//! | 3 | 127.0.0.3 | worker | 1200 | 0.180 | 1384 | 354352 | 184 |
//! | 4 | 127.0.0.3 | worker | 1200 | 0.148 | 1410 | 360984 | 210 |
//! | all | | | 4800 | 0.179 | 3271 | 745864 | 394 |
//! ```
//!
//! `time` is the display's wall time from the start signal to the last
//! flag; a worker's is from the start signal to its QUIET returning.
//! Workers on the display's node use the shm transport, whose operations
//! are not packets, so their packet counts stay 0 unless
//! `SSS_TRANSPORT=udp`. With `--quiet` only the `checksum` line is
//! printed.
//!
//! The checksum is 64-bit FNV-1a over the raw RGB bytes ([`fnv1a64`]); the
//! pixels are bit-identical whatever the number and placement of workers
//! (see [`render`] for why), so the checksum is the same for every run of
//! one image and equals that of [`render::Image::render`].
//!
//! # Compared with the seed
//!
//! The original sent `N` dithered 8-bit pixels per packet to a real frame
//! buffer; here a pixel is 3 bytes of RGB, so a block is `3 N` bytes. Its
//! workers looped over every pixel and skipped those of others; these
//! visit only their own blocks. SSS-CORE gave up on a packet after 16
//! retransmissions, so overloaded runs lost pixels; MBCF here retransmits
//! until the peer is declared down, and the display then fails instead of
//! writing an incomplete image.

pub mod render;

use clap::Parser;
use sss_mbcf::{Options, Perm, RemoteAddr, SegmentInfo, Task, TaskStats};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

pub use render::{Image, Scene};

/// Largest image, in pixels (192 MiB of frame buffer).
pub const MAX_PIXELS: u64 = 1 << 26;

/// Command line of `sss-raytrace`.
#[derive(Debug, Clone, Parser)]
#[command(
    name = "sss-raytrace",
    version,
    // The last of repeated options wins, so wrappers can append overrides.
    args_override_self = true,
    about = "Parallel ray tracer: workers WRITE pixel blocks into the display task's frame buffer",
    long_about = "Parallel ray tracer on MBCF. Rank 0 is the display: it owns the frame \
buffer and writes the PNG. Ranks 1..N-1 are workers: block b of --chunk pixels goes to \
worker b mod (N-1), which WRITEs it straight into the display's frame buffer. So \
`sss run -n 2` runs one worker and `-n 5` four; with -n 1 rank 0 renders alone.",
    after_long_help = "Examples (`sss-run` takes the same arguments as `sss run`):
  sss run -n 5 sss-raytrace
      four workers on one node (shm)
  sss run -n 5 --hosts 127.0.0.2,127.0.0.3 sss-raytrace --out a.png
      workers on two nodes: udp between them
  SSS_FAULT_DROP=0.1 SSS_FAULT_DUP=0.05 sss run -n 5 --hosts 127.0.0.2,127.0.0.3 sss-raytrace
      the same with 10% of datagrams dropped and 5% duplicated: same checksum

The display prints the image size, workers, wall time, the FNV-1a checksum \
of the raw RGB pixels and a Markdown table of blocks, time, packets sent, \
bytes sent and retransmissions per task."
)]
pub struct Args {
    /// Image width in pixels.
    #[arg(long, default_value_t = 640, value_parser = clap::value_parser!(u32).range(1..=16384))]
    pub width: u32,
    /// Image height in pixels.
    #[arg(long, default_value_t = 480, value_parser = clap::value_parser!(u32).range(1..=16384))]
    pub height: u32,
    /// Pixels per block: the unit of work and of one WRITE.
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u32).range(1..=65536))]
    pub chunk: u32,
    /// Rays per pixel along each axis (anti-aliasing on a regular grid).
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=8))]
    pub samples: u32,
    /// Scene to render.
    #[arg(long, default_value = "spheres", value_parser = clap::builder::PossibleValuesParser::new(render::SCENES))]
    pub scene: String,
    /// Where the display writes the PNG.
    #[arg(long, default_value = "raytrace.png")]
    pub out: PathBuf,
    /// Print only the checksum line.
    #[arg(long)]
    pub quiet: bool,
}

/// Why a run failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The runtime failed.
    #[error("MBCF: {0}")]
    Mbcf(#[from] sss_mbcf::Error),
    /// The arguments do not describe a renderable image.
    #[error("{0}")]
    Usage(String),
    /// A worker's node was declared down before its flag was set.
    #[error("worker task {0} is down; its blocks are missing")]
    WorkerDown(u32),
    /// A task sent a report the display cannot read.
    #[error("malformed report from task {0}")]
    Report(u32),
    /// The display could not get the frame buffer's address across.
    #[error("no frame buffer address from the display task")]
    NoFrameBuffer,
    /// Writing the PNG failed.
    #[error("cannot write {path}: {msg}")]
    Output {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        msg: String,
    },
}

/// 64-bit FNV-1a of `data`: the image checksum.
pub fn fnv1a64(data: &[u8]) -> u64 {
    data.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// How the image is cut into blocks and dealt to workers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    /// Pixels in the image.
    pub pixels: u64,
    /// Pixels per block (the last block may be shorter).
    pub chunk: u64,
    /// Workers (at least 1).
    pub workers: u64,
}

impl Layout {
    /// Blocks in the image.
    pub fn blocks(&self) -> u64 {
        self.pixels.div_ceil(self.chunk)
    }

    /// The pixel indices of block `b`.
    pub fn block(&self, b: u64) -> Range<u64> {
        let first = b * self.chunk;
        first..(first + self.chunk).min(self.pixels)
    }

    /// The worker (0-based) that renders block `b`: cyclic, as in the
    /// seed paper.
    pub fn owner(&self, b: u64) -> u64 {
        b % self.workers
    }

    /// The blocks of worker `w` (0-based), in order.
    pub fn blocks_of(&self, w: u64) -> impl Iterator<Item = u64> {
        (w..self.blocks()).step_by(self.workers as usize)
    }
}

/// Where things live in the display's segment: the completion flags, one
/// 8-byte word per rank (rank 0's unused), then the pixels.
#[derive(Debug, Clone, Copy)]
struct FrameBuffer {
    info: SegmentInfo,
    pixels_at: u64,
}

impl FrameBuffer {
    fn pixels_offset(size: u32) -> u64 {
        // Keep the pixels on their own cache lines, away from the flags.
        (u64::from(size) * 8).next_multiple_of(64)
    }

    fn flag_offset(rank: u32) -> u64 {
        u64::from(rank) * 8
    }

    fn flag(&self, rank: u32) -> RemoteAddr {
        self.info.at(Self::flag_offset(rank))
    }

    fn pixel(&self, index: u64) -> RemoteAddr {
        self.info.at(self.pixels_at + index * 3)
    }
}

/// What each task tells the display at the end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    /// Blocks this task rendered.
    pub blocks: u64,
    /// Its wall time from the start to its last operation done.
    pub time: Duration,
    /// Its runtime counters.
    pub stats: TaskStats,
    /// Its node.
    pub node: String,
}

impl Report {
    fn encode(&self) -> Vec<u8> {
        let s = &self.stats;
        let words = [
            self.blocks,
            self.time.as_nanos() as u64,
            s.packets_sent,
            s.bytes_sent,
            s.retransmissions,
            s.packets_received,
            s.bytes_received,
            s.applied,
            s.rejected,
            s.bad_packets,
        ];
        let mut b: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        b.extend_from_slice(self.node.as_bytes());
        b
    }

    fn decode(b: &[u8]) -> Option<Report> {
        let (words, node) = b.split_at_checked(80)?;
        let w: Vec<u64> = words
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
            .collect();
        Some(Report {
            blocks: w[0],
            time: Duration::from_nanos(w[1]),
            stats: TaskStats {
                packets_sent: w[2],
                bytes_sent: w[3],
                retransmissions: w[4],
                packets_received: w[5],
                bytes_received: w[6],
                applied: w[7],
                rejected: w[8],
                bad_packets: w[9],
                ..TaskStats::default()
            },
            node: String::from_utf8(node.to_vec()).ok()?,
        })
    }
}

/// What the display learned from a run.
#[derive(Debug, Clone)]
pub struct Summary {
    /// The image rendered.
    pub image: Image,
    /// Workers (0 when the display rendered alone).
    pub workers: u32,
    /// Pixels per block.
    pub chunk: u32,
    /// Wall time from the start to the last completion flag.
    pub time: Duration,
    /// The pixels, RGB8 row-major.
    pub pixels: Vec<u8>,
    /// One report per task, by rank.
    pub reports: Vec<Report>,
}

impl Summary {
    /// The checksum of the pixels.
    pub fn checksum(&self) -> u64 {
        fnv1a64(&self.pixels)
    }

    /// Writes the human-readable report (see the crate docs).
    pub fn print(&self, out: &mut impl Write, png: &Path) -> std::io::Result<()> {
        let img = &self.image;
        let layout = Layout {
            pixels: img.pixels(),
            chunk: u64::from(self.chunk),
            workers: 1,
        };
        writeln!(
            out,
            "image {}x{}, scene {}, {s}x{s} samples, {}{}, {} per block ({}, {} bytes per WRITE)",
            img.width,
            img.height,
            scene_name(&img.scene),
            plural(self.workers.into(), "worker"),
            if self.workers == 0 {
                " (the display renders)"
            } else {
                ""
            },
            plural(self.chunk.into(), "pixel"),
            plural(layout.blocks(), "block"),
            u64::from(self.chunk) * 3,
            s = img.samples,
        )?;
        writeln!(out, "time {:.3} s", self.time.as_secs_f64())?;
        writeln!(out, "checksum fnv1a64 {:016x}", self.checksum())?;
        writeln!(out, "wrote {}", png.display())?;
        writeln!(out)?;
        writeln!(
            out,
            "| task | node | role | blocks | time (s) | packets sent | bytes sent | retransmissions |"
        )?;
        writeln!(out, "|---:|---|---|---:|---:|---:|---:|---:|")?;
        for (rank, r) in self.reports.iter().enumerate() {
            let role = match (rank, self.workers) {
                (0, 0) => "display, renders",
                (0, _) => "display",
                _ => "worker",
            };
            writeln!(
                out,
                "| {rank} | {} | {role} | {} | {:.3} | {} | {} | {} |",
                r.node,
                r.blocks,
                r.time.as_secs_f64(),
                r.stats.packets_sent,
                r.stats.bytes_sent,
                r.stats.retransmissions,
            )?;
        }
        let total =
            |f: fn(&TaskStats) -> u64| self.reports.iter().map(|r| f(&r.stats)).sum::<u64>();
        writeln!(
            out,
            "| all | | | {} | {:.3} | {} | {} | {} |",
            self.reports.iter().map(|r| r.blocks).sum::<u64>(),
            self.time.as_secs_f64(),
            total(|s| s.packets_sent),
            total(|s| s.bytes_sent),
            total(|s| s.retransmissions),
        )
    }
}

/// "1 block", "2 blocks".
fn plural(n: u64, noun: &str) -> String {
    format!("{n} {noun}{}", if n == 1 { "" } else { "s" })
}

fn scene_name(s: &Scene) -> &'static str {
    render::SCENES
        .into_iter()
        .find(|n| Scene::by_name(n).as_ref() == Some(s))
        .unwrap_or("custom")
}

/// The image the arguments describe.
pub fn image(args: &Args) -> Result<Image, Error> {
    let scene = Scene::by_name(&args.scene).ok_or_else(|| {
        Error::Usage(format!(
            "unknown scene {:?} (known: {})",
            args.scene,
            render::SCENES.join(", ")
        ))
    })?;
    let img = Image {
        scene,
        width: args.width,
        height: args.height,
        samples: args.samples,
    };
    if img.pixels() > MAX_PIXELS {
        return Err(Error::Usage(format!(
            "{}x{} is more than {MAX_PIXELS} pixels",
            args.width, args.height
        )));
    }
    Ok(img)
}

/// Runs this task's part of the job: joins it from the launcher's
/// environment and renders. The display also writes the PNG to
/// `args.out` — created before rendering starts, so a bad path fails
/// fast — and returns the summary (`None` on workers); it prints nothing,
/// see [`main`].
pub fn run(args: &Args) -> Result<Option<Summary>, Error> {
    let img = image(args)?;
    let task = Task::init()?;
    run_on(&task, args, &img)
}

/// [`run`] on a task that has already joined. The caller keeps the task
/// alive until it has reported the outcome: once a task leaves, its peers
/// fail and the launcher may stop this process before it has said why.
pub fn run_on(task: &Task, args: &Args, img: &Image) -> Result<Option<Summary>, Error> {
    if task.rank() != 0 {
        worker(task, img, args.chunk)?;
        return Ok(None);
    }
    let file = File::create(&args.out).map_err(|e| Error::Output {
        path: args.out.clone(),
        msg: e.to_string(),
    })?;
    let done = display(task, img, args.chunk).and_then(|summary| {
        write_png(BufWriter::new(file), img.width, img.height, &summary.pixels)
            .map(|()| summary)
            .map_err(|e| Error::Output {
                path: args.out.clone(),
                msg: e.to_string(),
            })
    });
    if done.is_err() {
        // No empty or truncated image left behind to be mistaken for one.
        let _ = std::fs::remove_file(&args.out);
    }
    done.map(Some)
}

fn display(task: &Task, img: &Image, chunk: u32) -> Result<Summary, Error> {
    let size = task.size();
    let fb_len = FrameBuffer::pixels_offset(size) + img.pixels() * 3;
    // Workers WRITE pixels and bump flags with notify or FETCH_ADD; nobody
    // needs to READ.
    let seg = task.alloc(fb_len as usize, Perm::WRITE | Perm::ATOMIC)?;
    let fb = FrameBuffer {
        info: seg.info(),
        pixels_at: FrameBuffer::pixels_offset(size),
    };
    // Hand out the frame buffer; the allgather is also the start signal.
    task.allgather(&fb.info.to_bytes())?;
    let start = Instant::now();
    let workers = size - 1;
    let mut blocks = 0;
    if workers == 0 {
        let layout = Layout {
            pixels: img.pixels(),
            chunk: u64::from(chunk),
            workers: 1,
        };
        let mut buf = Vec::with_capacity(chunk as usize * 3);
        for b in layout.blocks_of(0) {
            let px = layout.block(b);
            buf.resize((px.end - px.start) as usize * 3, 0);
            img.render_span(px.start, &mut buf);
            seg.write_bytes((fb.pixels_at + px.start * 3) as usize, &buf)?;
            blocks += 1;
        }
    }
    for rank in 1..size {
        let flag = seg.word(FrameBuffer::flag_offset(rank) as usize)?;
        // Wake now and then to notice a worker whose node went down.
        while task
            .wait_word_timeout(flag, |v| v != 0, Duration::from_millis(500))
            .is_none()
        {
            if task.is_down(rank) {
                return Err(Error::WorkerDown(rank));
            }
        }
    }
    let time = start.elapsed();
    let mut pixels = vec![0u8; img.pixels() as usize * 3];
    seg.read_bytes(fb.pixels_at as usize, &mut pixels)?;
    let me = Report {
        blocks,
        time,
        stats: task.stats(),
        node: task.node().to_string(),
    };
    let reports = gather_reports(task, &me)?;
    Ok(Summary {
        image: img.clone(),
        workers,
        chunk,
        time,
        pixels,
        reports,
    })
}

fn worker(task: &Task, img: &Image, chunk: u32) -> Result<(), Error> {
    let all = task.allgather(&[])?;
    let info = all
        .first()
        .and_then(|b| SegmentInfo::from_bytes(b))
        .ok_or(Error::NoFrameBuffer)?;
    let size = task.size();
    let fb = FrameBuffer {
        info,
        pixels_at: FrameBuffer::pixels_offset(size),
    };
    let start = Instant::now();
    let layout = Layout {
        pixels: img.pixels(),
        chunk: u64::from(chunk),
        workers: u64::from(size - 1),
    };
    let me = u64::from(task.rank() - 1);
    let flag = fb.flag(task.rank());
    let mut blocks = layout.blocks_of(me).peekable();
    let mut done = 0;
    let mut buf = Vec::with_capacity(chunk as usize * 3);
    if blocks.peek().is_none() {
        // More workers than blocks: nothing to draw, but the display still
        // waits for this flag.
        task.fetch_add(flag, 1, Options::default())?.wait_value()?;
    }
    while let Some(b) = blocks.next() {
        let px = layout.block(b);
        buf.resize((px.end - px.start) as usize * 3, 0);
        img.render_span(px.start, &mut buf);
        // The flag rides on the last block: it is bumped after that
        // block's data, which lands after every earlier block.
        let opts = if blocks.peek().is_none() {
            Options::notify(flag)
        } else {
            Options::default()
        };
        // The runtime copies `buf` before returning, so it can be reused.
        task.write(fb.pixel(px.start), &buf, opts)?;
        done += 1;
    }
    task.quiet()?;
    let me = Report {
        blocks: done,
        time: start.elapsed(),
        stats: task.stats(),
        node: task.node().to_string(),
    };
    gather_reports(task, &me)?;
    Ok(())
}

fn gather_reports(task: &Task, me: &Report) -> Result<Vec<Report>, Error> {
    task.allgather(&me.encode())?
        .iter()
        .enumerate()
        .map(|(rank, b)| Report::decode(b).ok_or(Error::Report(rank as u32)))
        .collect()
}

/// Encodes `pixels` (RGB8, row-major, `width` × `height`) as PNG into
/// `out`.
pub fn write_png(out: impl Write, width: u32, height: u32, pixels: &[u8]) -> std::io::Result<()> {
    let mut enc = png::Encoder::new(out, width, height);
    enc.set_color(png::ColorType::Rgb);
    enc.set_depth(png::BitDepth::Eight);
    let mut w = enc.write_header()?;
    w.write_image_data(pixels)?;
    w.finish()?;
    Ok(())
}

/// The whole program: parse the command line, run this task's part, and on
/// the display write the PNG and print the report. Returns the exit status.
pub fn main() -> i32 {
    let args = Args::parse();
    // The task stays joined until the outcome is printed (see `run_on`).
    let mut task = None;
    let outcome = image(&args).and_then(|img| {
        let t = task.insert(Task::init()?);
        run_on(t, &args, &img)
    });
    let code = match outcome.and_then(|s| match s {
        Some(s) => {
            let mut out = std::io::stdout().lock();
            let printed = if args.quiet {
                writeln!(out, "checksum fnv1a64 {:016x}", s.checksum())
            } else {
                s.print(&mut out, &args.out)
            };
            printed
                .and_then(|()| out.flush())
                .map_err(|e| Error::Output {
                    path: "standard output".into(),
                    msg: e.to_string(),
                })
        }
        None => Ok(()),
    }) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("sss-raytrace: error: {e}");
            1
        }
    };
    drop(task);
    code
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv1a64_known_values() {
        assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a64(b"foobar"), 0x8594_4171_f739_67e8);
    }

    /// Pins the pixels: a change here means every earlier checksum is void,
    /// or that some build computes different colours (debug and release
    /// builds must agree).
    #[test]
    fn golden_checksums() {
        for (scene, want) in [
            ("spheres", 0x73df_9623_33d8_3468),
            ("grid", 0x19bc_b928_5c8c_56a8),
        ] {
            let img = Image {
                scene: Scene::by_name(scene).expect("built-in scene"),
                width: 64,
                height: 48,
                samples: 2,
            };
            assert_eq!(fnv1a64(&img.render()), want, "{scene}");
        }
    }

    #[test]
    fn blocks_are_dealt_cyclically_and_cover_the_image_once() {
        for (pixels, chunk, workers) in [(100, 7, 3), (64, 64, 4), (10, 1, 16), (1, 5, 2)] {
            let l = Layout {
                pixels,
                chunk,
                workers,
            };
            let mut seen = vec![0u32; pixels as usize];
            for w in 0..workers {
                for b in l.blocks_of(w) {
                    assert_eq!(l.owner(b), w);
                    for p in l.block(b) {
                        seen[p as usize] += 1;
                    }
                }
            }
            assert!(seen.iter().all(|&n| n == 1), "{pixels} {chunk} {workers}");
            assert_eq!(l.block(l.blocks() - 1).end, pixels);
        }
    }

    #[test]
    fn reports_round_trip() {
        let r = Report {
            blocks: 7,
            time: Duration::from_micros(1234567),
            stats: TaskStats {
                packets_sent: 1,
                bytes_sent: 2,
                packets_received: 3,
                bytes_received: 4,
                retransmissions: 5,
                applied: 6,
                rejected: 7,
                bad_packets: 8,
                ..TaskStats::default()
            },
            node: "127.0.0.3".into(),
        };
        assert_eq!(Report::decode(&r.encode()), Some(r));
        assert_eq!(Report::decode(&[0; 79]), None);
    }

    #[test]
    fn arguments_are_checked() {
        let parse = |a: &[&str]| {
            Args::try_parse_from(std::iter::once("sss-raytrace").chain(a.iter().copied()))
        };
        let a = parse(&[]).expect("defaults");
        assert_eq!((a.width, a.height, a.chunk), (640, 480, 64));
        assert!(parse(&["--width", "0"]).is_err());
        assert!(parse(&["--chunk", "0"]).is_err());
        assert!(parse(&["--scene", "teapot"]).is_err());
        assert!(parse(&["--samples", "x"]).is_err());
        let big = parse(&["--width", "16384", "--height", "16384"]).expect("in range");
        assert!(matches!(image(&big), Err(Error::Usage(_))));
    }

    #[test]
    fn png_round_trips() {
        let dir = std::env::temp_dir().join(format!("sss-raytrace-unit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let path = dir.join("t.png");
        let px: Vec<u8> = (0..5 * 3 * 3).map(|i| (i * 7) as u8).collect();
        write_png(File::create(&path).expect("create"), 5, 3, &px).expect("write");
        let dec = png::Decoder::new(std::io::BufReader::new(File::open(&path).expect("open")));
        let mut r = dec.read_info().expect("header");
        let mut buf = vec![0; r.output_buffer_size()];
        let info = r.next_frame(&mut buf).expect("frame");
        assert_eq!((info.width, info.height), (5, 3));
        assert_eq!(&buf[..info.buffer_size()], &px[..]);
        std::fs::remove_dir_all(&dir).expect("cleanup");
        // Too few pixels for the size.
        assert!(write_png(Vec::new(), 5, 4, &px).is_err());
    }
}
