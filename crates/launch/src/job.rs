//! One job from start to end: plan, spawn, watch, terminate, clean up.

use std::ffi::OsString;
use std::io::{self, Write as _};
use std::net::{IpAddr, SocketAddr, ToSocketAddrs, UdpSocket};
use std::os::unix::process::ExitStatusExt;
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use sss_boot::{vars, BootServer};

use crate::guardian::Guardian;
use crate::hosts::{self, Host, Slot};
use crate::output::{self, say, Stream};
use crate::{ssh, sys, RunArgs, RunError, Spawner};

/// Time between SIGTERM and SIGKILL when ending tasks.
const GRACE: Duration = Duration::from_secs(2);
/// How long to wait for output to drain after the tasks ended: a task's
/// descendant that escaped its process group could hold a pipe open.
const DRAIN: Duration = Duration::from_secs(2);
/// Limit for each remote cleanup command.
const REMOTE_CLEANUP: Duration = Duration::from_secs(15);
/// Exit status of a job ended by `--timeout`, as `timeout(1)` uses.
const TIMEOUT_STATUS: i32 = 124;

/// What to run where, checked before anything starts.
struct Plan {
    np: u32,
    hosts: Vec<Host>,
    slots: Vec<Slot>,
    spawner: Spawner,
    /// ssh program and options, for the ssh spawner.
    ssh: Vec<String>,
    tag: bool,
    timeout: Option<Duration>,
    program: String,
    args: Vec<String>,
}

impl Plan {
    fn new(a: &RunArgs) -> Result<Plan, RunError> {
        if a.np == 0 {
            return Err(RunError::NoTasks);
        }
        // Before anything is sized by it (a rank table of 2^32 entries
        // aborted the launcher).
        if a.np > crate::MAX_TASKS {
            return Err(RunError::TooManyTasks(a.np));
        }
        let hosts = if let Some(path) = &a.hostfile {
            let text = std::fs::read_to_string(path).map_err(|source| RunError::HostfileRead {
                path: path.clone(),
                source,
            })?;
            hosts::parse_hostfile(path, &text)?
        } else if !a.hosts.is_empty() {
            hosts::parse_list(&a.hosts)?
        } else if a.spawner == Spawner::Ssh {
            return Err(RunError::BadHosts(
                "--spawner ssh needs --hosts or --hostfile".into(),
            ));
        } else {
            vec![Host {
                name: "127.0.0.1".into(),
                slots: None,
            }]
        };
        for h in &hosts {
            if h.name.starts_with('-') {
                return Err(RunError::BadHosts(format!("bad host name {:?}", h.name)));
            }
            if a.spawner == Spawner::Local && !hosts::is_loopback(&h.name) {
                return Err(RunError::NotLoopback(h.name.clone()));
            }
        }
        let slots = hosts::place(a.np, &hosts, a.per_host)?;
        let ssh = match a.spawner {
            Spawner::Ssh => ssh::ssh_program(std::env::var("SSS_SSH").ok().as_deref())?,
            Spawner::Local => Vec::new(),
        };
        let (program, args) = match a.command.split_first() {
            Some((p, rest)) if !p.is_empty() => (p.clone(), rest.to_vec()),
            _ => return Err(RunError::BadHosts("no program to run".into())),
        };
        Ok(Plan {
            np: a.np,
            hosts,
            slots,
            spawner: a.spawner,
            ssh,
            tag: a.tag_output,
            timeout: a.timeout,
            program,
            args,
        })
    }
}

/// One running (or finished) task.
struct Task {
    rank: u32,
    host: String,
    /// Also its process group id.
    pid: u32,
    /// The ssh connection's stdin, closed to end a remote task.
    stdin: Option<ChildStdin>,
    done: bool,
}

impl Task {
    fn describe(&self) -> String {
        format!("task {} (pid {} on {})", self.rank, self.pid, self.host)
    }
}

enum Event {
    Exited(u32, io::Result<ExitStatus>),
    Signal(i32),
}

/// Where the job stands.
enum Phase {
    Running,
    /// Tasks were told to stop; SIGKILL at the instant given.
    Terminating(Instant),
    /// SIGKILL was sent; waiting for the tasks to be reaped.
    Killing,
}

pub(crate) fn run(args: RunArgs) -> i32 {
    let plan = match Plan::new(&args) {
        Ok(p) => p,
        Err(e) => {
            say!("{e}");
            return e.exit_code();
        }
    };
    match Job::start(plan) {
        Ok(job) => job.wait(),
        Err(e) => {
            say!("{e}");
            e.exit_code()
        }
    }
}

struct Job {
    plan: Plan,
    id: u32,
    tasks: Vec<Task>,
    events: Receiver<Event>,
    tx: Sender<Event>,
    server: Option<sss_boot::BootServerHandle>,
    /// The job's secret: in the environment of local tasks, on the ssh
    /// connection's stdin for remote ones (never on a command line).
    secret: sss_boot::JobSecret,
    signals: signal_hook::iterator::Handle,
    signal_thread: Option<std::thread::JoinHandle<()>>,
    guardian: Option<Guardian>,
    /// Output forwarders report here when their pipe closes.
    drained: Receiver<()>,
    drained_tx: Sender<()>,
    forwarders: usize,
    /// The exit status, once decided by the first failure, signal or timeout.
    status: Option<i32>,
    phase: Phase,
    started: Instant,
    /// Node daemons started for this job (local spawner).
    daemons: Option<crate::daemons::Daemons>,
}

impl Job {
    /// Starts the server, the guardian and every task. On an error, what
    /// was started is ended and cleaned up before returning.
    fn start(plan: Plan) -> Result<Job, RunError> {
        let id = job_id()?;
        let advertised = match plan.spawner {
            Spawner::Local => "127.0.0.1".to_string(),
            Spawner::Ssh => advertised_addr(&plan.hosts),
        };
        let bind = rendezvous_bind(&advertised);
        // Only the job's tasks may join: they get this secret, nobody else.
        let secret = sss_boot::JobSecret::generate().map_err(|e| RunError::Io {
            what: "cannot draw the job's secret from the OS",
            source: std::io::Error::other(e.to_string()),
        })?;
        let server = BootServer::bind(bind.as_str(), id, plan.np)?.with_secret(secret.clone());
        let boot = format!("tcp:{advertised}:{}", server.addr().port());
        let server = server.spawn()?;

        let (tx, events) = mpsc::channel();
        let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP])
            .map_err(RunError::Signals)?;
        let handle = signals.handle();
        let stx = tx.clone();
        let signal_thread = std::thread::Builder::new()
            .name("sss-run-signals".into())
            .spawn(move || {
                for s in signals.forever() {
                    if stx.send(Event::Signal(s)).is_err() {
                        break;
                    }
                }
            })
            .map_err(|source| RunError::Io {
                what: "cannot start the signal thread",
                source,
            })?;
        let guardian = match Guardian::start(id) {
            Ok(g) => Some(g),
            Err(e) => {
                say!("warning: no cleanup guardian ({e}); a killed launcher may leave /dev/shm files");
                None
            }
        };
        let (drained_tx, drained) = mpsc::channel();
        let daemons = (plan.spawner == Spawner::Local).then(|| {
            let hosts: Vec<String> = plan.hosts.iter().map(|h| h.name.clone()).collect();
            crate::daemons::Daemons::start(&hosts)
        });
        let mut job = Job {
            plan,
            id,
            tasks: Vec::new(),
            events,
            tx,
            server: Some(server),
            secret,
            signals: handle,
            signal_thread: Some(signal_thread),
            guardian,
            drained,
            drained_tx,
            forwarders: 0,
            status: None,
            phase: Phase::Running,
            started: Instant::now(),
            daemons,
        };
        for rank in 0..job.plan.np {
            if let Err(e) = job.spawn(rank, &boot) {
                if job.tasks.is_empty() {
                    job.finish();
                    return Err(e);
                }
                // End the tasks already started; `wait` reaps them and
                // cleans up as after any failure.
                say!("{e}; terminating {}", tasks(job.tasks.len()));
                job.status = Some(e.exit_code());
                job.terminate(Signal::SIGTERM);
                job.phase = Phase::Terminating(Instant::now() + GRACE);
                break;
            }
        }
        Ok(job)
    }

    /// The environment of task `rank`.
    fn task_env(&self, rank: u32, boot: &str) -> Vec<(String, String)> {
        let slot = self.plan.slots[rank as usize];
        let mut env = vec![
            (vars::JOB, self.id.to_string()),
            (vars::RANK, rank.to_string()),
            (vars::SIZE, self.plan.np.to_string()),
            (vars::NODE, self.plan.hosts[slot.host].name.clone()),
            (vars::NODE_ID, slot.host.to_string()),
            (vars::LOCAL_RANK, slot.local_rank.to_string()),
            (vars::LOCAL_SIZE, slot.local_size.to_string()),
            (vars::BOOT, boot.to_string()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect::<Vec<_>>();
        if self.plan.spawner == Spawner::Ssh {
            // Remote tasks get the login environment; pass on our SSS_*
            // settings (transport overrides, timeouts) explicitly. Never a
            // secret (the job's, a cluster's): this goes on the remote
            // command line.
            for (k, v) in std::env::vars() {
                if k.starts_with("SSS_")
                    && !k.ends_with("_SECRET")
                    && !env.iter().any(|(e, _)| *e == k)
                {
                    env.push((k, v));
                }
            }
        } else {
            env.push((vars::JOB_SECRET.to_string(), self.secret.to_hex()));
        }
        env
    }

    fn spawn(&mut self, rank: u32, boot: &str) -> Result<(), RunError> {
        let env = self.task_env(rank, boot);
        let host = self.plan.hosts[self.plan.slots[rank as usize].host]
            .name
            .clone();
        let mut cmd = match self.plan.spawner {
            Spawner::Local => {
                // Rank 0 reads the launcher's stdin (`sss run … PROG <
                // file`), as mpirun does; the others read nothing.
                let stdin = if rank == 0 {
                    Stdio::inherit()
                } else {
                    Stdio::null()
                };
                let mut c = Command::new(&self.plan.program);
                c.args(&self.plan.args).envs(env).stdin(stdin);
                c
            }
            Spawner::Ssh => {
                let cwd = std::env::current_dir().ok();
                let cwd = cwd.as_ref().and_then(|d| d.to_str());
                let argv = ssh::task_argv(
                    &self.plan.ssh,
                    &host,
                    cwd,
                    &env,
                    &self.plan.program,
                    &self.plan.args,
                );
                let mut c = command(&argv);
                c.stdin(Stdio::piped());
                c
            }
        };
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        sys::die_with_launcher(&mut cmd);
        let mut child: Child = cmd.spawn().map_err(|source| RunError::Spawn {
            rank,
            program: self.plan.program.clone(),
            source,
        })?;
        let pid = child.id();
        if let Some(g) = &mut self.guardian {
            g.watch(pid);
        }
        let tag = self.plan.tag.then(|| format!("[{rank}] "));
        for (src, stream) in [
            (
                child
                    .stdout
                    .take()
                    .map(|s| Box::new(s) as Box<dyn io::Read + Send>),
                Stream::Out,
            ),
            (
                child
                    .stderr
                    .take()
                    .map(|s| Box::new(s) as Box<dyn io::Read + Send>),
                Stream::Err,
            ),
        ] {
            if let Some(src) = src {
                match output::forward(src, stream, tag.clone(), self.drained_tx.clone()) {
                    Ok(()) => self.forwarders += 1,
                    Err(e) => say!("warning: task {rank}'s output is lost: {e}"),
                }
            }
        }
        let mut stdin = child.stdin.take();
        if let Some(s) = stdin.as_mut() {
            // The remote wrapper reads the secret from the connection's
            // first line (see `ssh::REMOTE_WRAPPER`). A failed write shows
            // as the task's refused HELLO.
            let _ = writeln!(s, "{}", self.secret.to_hex());
        }
        let tx = self.tx.clone();
        let waiter = std::thread::Builder::new()
            .name("sss-run-wait".into())
            .spawn(move || {
                let st = child.wait();
                let _ = tx.send(Event::Exited(rank, st));
            });
        if let Err(source) = waiter {
            // Without a waiter nobody would reap it: end it now.
            sys::signal_group(pid, Signal::SIGKILL);
            return Err(RunError::Io {
                what: "cannot start a task's waiter thread",
                source,
            });
        }
        self.tasks.push(Task {
            rank,
            host,
            pid,
            stdin,
            done: false,
        });
        Ok(())
    }

    fn live(&self) -> usize {
        self.tasks.iter().filter(|t| !t.done).count()
    }

    /// Sends `sig` to every live task's process group; for remote tasks,
    /// also closes the connection's stdin so the remote wrapper ends them.
    fn terminate(&mut self, sig: Signal) {
        for t in self.tasks.iter_mut().filter(|t| !t.done) {
            t.stdin = None;
            sys::signal_group(t.pid, sig);
        }
    }

    /// Watches the tasks until all have ended, then cleans up. Returns the
    /// job's exit status.
    fn wait(mut self) -> i32 {
        let deadline = self.plan.timeout.map(|t| self.started + t);
        let mut phase = std::mem::replace(&mut self.phase, Phase::Killing);
        while self.live() > 0 {
            let wake = match phase {
                Phase::Running => deadline,
                Phase::Terminating(at) => Some(at),
                Phase::Killing => None,
            };
            let ev = match wake {
                Some(at) => self
                    .events
                    .recv_timeout(at.saturating_duration_since(Instant::now())),
                None => self
                    .events
                    .recv()
                    .map_err(|_| RecvTimeoutError::Disconnected),
            };
            match ev {
                Ok(Event::Exited(rank, st)) => {
                    let Some(i) = self.tasks.iter().position(|t| t.rank == rank) else {
                        continue;
                    };
                    self.tasks[i].done = true;
                    let failure = match st {
                        Ok(st) if st.success() => None,
                        Ok(st) => Some((status_code(st), describe_status(st))),
                        Err(e) => Some((1, format!("could not be waited for ({e})"))),
                    };
                    if let (Some((code, how)), Phase::Running) = (failure, &phase) {
                        let live = self.live();
                        let what = self.tasks[i].describe();
                        if live == 0 {
                            say!("{what} {how}");
                        } else {
                            say!("{what} {how}; terminating the other {}", tasks(live));
                        }
                        self.status.get_or_insert(code);
                        self.terminate(Signal::SIGTERM);
                        phase = Phase::Terminating(Instant::now() + GRACE);
                    }
                }
                Ok(Event::Signal(s)) => {
                    let name = sys::signal_name(s);
                    if let Phase::Running = phase {
                        say!("received {name}; terminating {}", tasks(self.live()));
                        self.status.get_or_insert(128 + s);
                        let sig = Signal::try_from(s).unwrap_or(Signal::SIGTERM);
                        self.terminate(sig);
                        phase = Phase::Terminating(Instant::now() + GRACE);
                    } else {
                        say!("received {name} again; killing the tasks");
                        self.terminate(Signal::SIGKILL);
                        phase = Phase::Killing;
                    }
                }
                Err(RecvTimeoutError::Timeout) => match phase {
                    Phase::Running => {
                        let secs = self.plan.timeout.unwrap_or_default().as_secs_f64();
                        say!(
                            "job timed out after {secs} s; terminating {}",
                            tasks(self.live())
                        );
                        self.status.get_or_insert(TIMEOUT_STATUS);
                        self.terminate(Signal::SIGTERM);
                        phase = Phase::Terminating(Instant::now() + GRACE);
                    }
                    Phase::Terminating(_) => {
                        say!(
                            "{} still running {} s after SIGTERM; sending SIGKILL",
                            tasks(self.live()),
                            GRACE.as_secs()
                        );
                        self.terminate(Signal::SIGKILL);
                        phase = Phase::Killing;
                    }
                    Phase::Killing => {}
                },
                // Cannot happen while we hold a sender; stop rather than spin.
                Err(RecvTimeoutError::Disconnected) => break,
            }
        }
        self.finish();
        self.status.unwrap_or(0)
    }

    /// After the tasks: kill what is left of their process groups, drain
    /// output, stop the server, remove shared memory, dismiss the guardian.
    fn finish(&mut self) {
        if let Some(d) = &mut self.daemons {
            d.stop();
        }
        for t in &mut self.tasks {
            t.stdin = None;
            sys::signal_group(t.pid, Signal::SIGKILL);
        }
        // Descendants that left their task's process group (setsid,
        // daemons) still carry the job in their environment.
        let mut stragglers = Vec::new();
        if self.plan.spawner == Spawner::Local {
            stragglers = job_processes(self.id);
            for &p in &stragglers {
                sys::signal_process(p, Signal::SIGKILL);
            }
        }
        // SIGKILL is asynchronous: wait (briefly) until the groups are
        // gone, so nothing creates a file after we clean up.
        let until = Instant::now() + Duration::from_secs(1);
        while Instant::now() < until
            && (self.tasks.iter().any(|t| sys::group_alive(t.pid))
                || stragglers.iter().any(|&p| sys::process_alive(p)))
        {
            std::thread::sleep(Duration::from_millis(10));
        }
        let until = Instant::now() + DRAIN;
        while self.forwarders > 0 {
            match self
                .drained
                .recv_timeout(until.saturating_duration_since(Instant::now()))
            {
                Ok(()) => self.forwarders -= 1,
                Err(_) => break,
            }
        }
        if let Some(s) = self.server.take() {
            s.shutdown();
        }
        self.signals.close();
        if let Some(t) = self.signal_thread.take() {
            let _ = t.join();
        }
        match self.plan.spawner {
            Spawner::Local => remove_shm(self.id),
            Spawner::Ssh => self.remote_cleanup(),
        }
        if let Some(g) = self.guardian.take() {
            g.dismiss();
        }
    }

    /// Removes the job's shared-memory files on every host that ran a task.
    fn remote_cleanup(&self) {
        let mut used: Vec<usize> = self.plan.slots.iter().map(|s| s.host).collect();
        used.dedup();
        let children: Vec<(String, io::Result<Child>)> = used
            .iter()
            .map(|&h| {
                let host = self.plan.hosts[h].name.clone();
                let argv = ssh::cleanup_argv(&self.plan.ssh, &host, self.id);
                let mut c = command(&argv);
                c.stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .stderr(Stdio::null());
                sys::die_with_launcher(&mut c);
                (host, c.spawn())
            })
            .collect();
        let until = Instant::now() + REMOTE_CLEANUP;
        for (host, child) in children {
            let Ok(mut child) = child else {
                say!("warning: cannot clean shared memory on {host}");
                continue;
            };
            loop {
                match child.try_wait() {
                    Ok(Some(_)) => break,
                    Ok(None) if Instant::now() < until => {
                        std::thread::sleep(Duration::from_millis(50))
                    }
                    _ => {
                        say!("warning: shared-memory cleanup on {host} timed out");
                        sys::signal_group(child.id(), Signal::SIGKILL);
                        let _ = child.wait();
                        break;
                    }
                }
            }
        }
    }
}

/// `Command` for an argv.
fn command(argv: &[OsString]) -> Command {
    let mut c = Command::new(argv.first().cloned().unwrap_or_else(|| "ssh".into()));
    c.args(argv.iter().skip(1));
    c
}

/// Processes other than this one whose environment has `SSS_JOB=<job>`.
/// Processes of other users, and zombies, have no readable environment
/// and are not listed.
fn job_processes(job: u32) -> Vec<u32> {
    let want = format!("{}={job}", vars::JOB);
    let me = std::process::id();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| pid != me)
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|env| env.split(|b| *b == 0).any(|v| v == want.as_bytes()))
        })
        .collect()
}

/// Removes `/dev/shm/sss-<job>-*` (in `SSS_SHM_DIR` when set).
pub(crate) fn remove_shm(job: u32) {
    let prefix = sss_boot::shm_prefix(job);
    let Ok(dir) = sss_mbcf::shm_dir().and_then(std::fs::read_dir) else {
        return;
    };
    for e in dir.flatten() {
        if e.file_name().to_string_lossy().starts_with(&prefix) {
            if let Err(err) = std::fs::remove_file(e.path()) {
                if err.kind() != io::ErrorKind::NotFound {
                    say!("warning: cannot remove {}: {err}", e.path().display());
                }
            }
        }
    }
}

/// A random non-zero job id from the OS.
fn job_id() -> Result<u32, RunError> {
    loop {
        match getrandom::u32() {
            Ok(0) => continue,
            Ok(v) => return Ok(v),
            Err(e) => return Err(RunError::Random(e.to_string())),
        }
    }
}

/// The address remote tasks should use to reach this machine:
/// `SSS_BOOT_ADDR`, else the local address that routes to the first host
/// (a connected UDP socket sends nothing but learns its source address),
/// else the host name.
fn advertised_addr(hosts: &[Host]) -> String {
    if let Ok(a) = std::env::var("SSS_BOOT_ADDR") {
        if !a.is_empty() {
            return a;
        }
    }
    let route = hosts.first().and_then(|h| {
        let target: SocketAddr = (h.name.as_str(), 22).to_socket_addrs().ok()?.next()?;
        let any: SocketAddr = match target {
            SocketAddr::V4(_) => "0.0.0.0:0".parse().ok()?,
            SocketAddr::V6(_) => "[::]:0".parse().ok()?,
        };
        let s = UdpSocket::bind(any).ok()?;
        s.connect(target).ok()?;
        Some(s.local_addr().ok()?.ip())
    });
    match route {
        Some(IpAddr::V6(ip)) => format!("[{ip}]"),
        Some(ip) => ip.to_string(),
        None => std::fs::read_to_string("/proc/sys/kernel/hostname")
            .map(|s| s.trim().to_string())
            .unwrap_or_else(|_| "localhost".into()),
    }
}

/// Where the rendezvous listens: only the address the job's tasks are
/// told to reach, never every interface of the machine.
fn rendezvous_bind(advertised: &str) -> String {
    format!("{advertised}:0")
}

/// The launcher's exit status for a task's status.
fn status_code(st: ExitStatus) -> i32 {
    match (st.code(), st.signal()) {
        (Some(c), _) => c,
        (None, Some(s)) => 128 + s,
        _ => 1,
    }
}

/// "exited with status 3", "was killed by signal 11 (SIGSEGV)".
fn describe_status(st: ExitStatus) -> String {
    match (st.code(), st.signal()) {
        (Some(c), _) => format!("exited with status {c}"),
        (None, Some(s)) => {
            let core = if st.core_dumped() {
                ", core dumped"
            } else {
                ""
            };
            format!("was killed by signal {s} ({}{core})", sys::signal_name(s))
        }
        _ => format!("ended with {st}"),
    }
}

/// "1 task", "3 tasks".
fn tasks(n: usize) -> String {
    if n == 1 {
        "1 task".into()
    } else {
        format!("{n} tasks")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Regression: the ssh spawner's rendezvous listened on 0.0.0.0, so
    /// anyone who could reach any interface of the machine could say
    /// HELLO first.
    #[test]
    fn the_rendezvous_listens_only_where_tasks_are_told_to_connect() {
        assert_eq!(rendezvous_bind("10.1.2.3"), "10.1.2.3:0");
        assert_eq!(rendezvous_bind("[fd00::7]"), "[fd00::7]:0");
        let hosts = [Host {
            name: "127.0.0.5".into(),
            slots: None,
        }];
        let bind = rendezvous_bind(&advertised_addr(&hosts));
        assert!(!bind.starts_with("0.0.0.0"), "{bind}");
        std::net::TcpListener::bind(bind.as_str()).expect("a local address");
    }

    #[test]
    fn statuses() {
        let segv = ExitStatus::from_raw(11);
        assert_eq!(status_code(segv), 139);
        assert_eq!(describe_status(segv), "was killed by signal 11 (SIGSEGV)");
        let dumped = ExitStatus::from_raw(11 | 0x80);
        assert_eq!(
            describe_status(dumped),
            "was killed by signal 11 (SIGSEGV, core dumped)"
        );
        let three = ExitStatus::from_raw(3 << 8);
        assert_eq!(status_code(three), 3);
        assert_eq!(describe_status(three), "exited with status 3");
        assert_eq!(tasks(1), "1 task");
        assert_eq!(tasks(3), "3 tasks");
    }

    fn args(extra: &[&str]) -> RunArgs {
        use clap::Parser;
        #[derive(Parser)]
        struct Cli {
            #[command(flatten)]
            run: RunArgs,
        }
        let mut v = vec!["sss-run"];
        v.extend_from_slice(extra);
        Cli::try_parse_from(v).unwrap().run
    }

    #[test]
    fn plans_are_checked_before_anything_starts() {
        let e = Plan::new(&args(&["-n", "2", "--hosts", "10.1.2.3", "p"]))
            .err()
            .unwrap();
        assert!(matches!(e, RunError::NotLoopback(_)));
        assert_eq!(e.exit_code(), 2);
        let e = Plan::new(&args(&["-n", "2", "--spawner", "ssh", "p"]))
            .err()
            .unwrap();
        assert!(e.to_string().contains("--hosts"), "{e}");
        let e = Plan::new(&args(&[
            "-n",
            "2",
            "--spawner",
            "ssh",
            "--hosts",
            "-oProxyCommand=x",
            "p",
        ]))
        .err()
        .unwrap();
        assert!(e.to_string().contains("bad host name"), "{e}");
        let p = Plan::new(&args(&["-n", "3", "p", "a"])).unwrap();
        assert_eq!(p.hosts[0].name, "127.0.0.1");
        assert_eq!(
            (p.program.as_str(), p.args.len(), p.slots.len()),
            ("p", 1, 3)
        );
        let e = Plan::new(&args(&["-n", "2", "--hostfile", "/nonexistent/hf", "p"]))
            .err()
            .unwrap();
        assert!(e.to_string().contains("/nonexistent/hf"), "{e}");
    }
}
