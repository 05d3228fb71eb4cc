//! A throwaway PostgreSQL cluster for team-mode tests: Debian's server
//! binaries (`initdb`, `postgres`), a data folder in a temporary folder, a
//! free port on loopback, password authentication (SCRAM) for one
//! superuser, and no Unix socket. The server stops when the value is
//! dropped, and dies with the test process even when that is killed (the
//! server gets `SIGQUIT` when its parent goes: `PR_SET_PDEATHSIG`).
//!
//! PostgreSQL refuses to run as root, and tests and CI run as root: then
//! the server (and `initdb`) run as the unprivileged user `nobody`, and
//! the data folder belongs to it. As any other user they run as that user.
//!
//! ```no_run
//! let pg = baton_testkit::postgres::Postgres::start();
//! let url = pg.create_database("t1");
//! // … BATON_DATABASE_URL=url …
//! pg.stop();           // PostgreSQL goes away (a fault)
//! pg.start_again();    // and comes back on the same port with the same data
//! ```

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// The superuser's name.
pub const USER: &str = "baton";
/// The superuser's password.
pub const PASSWORD: &str = "baton-test-secret";

/// Where the data folders of this machine's test clusters live; a folder
/// left by a killed test process is removed by the next one.
const ROOT: &str = "baton-testkit-postgres";

/// A running throwaway cluster.
pub struct Postgres {
    /// The cluster's folder (data folder, password file, server log).
    dir: PathBuf,
    bin: PathBuf,
    port: u16,
    run_as: Option<(u32, u32)>,
    server: Mutex<Option<Child>>,
}

static DATABASES: AtomicUsize = AtomicUsize::new(0);

impl Postgres {
    /// Starts a fresh cluster (about a second: `initdb` with `--no-sync`).
    /// Panics with what went wrong when PostgreSQL is not installed or does
    /// not start — tests that need it must not pass without it.
    pub fn start() -> Postgres {
        let bin = server_bin().unwrap_or_else(|| {
            panic!(
                "PostgreSQL's server is not installed (no /usr/lib/postgresql/*/bin/postgres); \
                 install it with `apt-get install postgresql` (.ci/run does)"
            )
        });
        sweep_dead_clusters();
        let run_as = unprivileged_user();
        let n = DATABASES.fetch_add(1, Ordering::Relaxed);
        let dir = clusters_root(run_as.is_some()).join(format!("{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("cluster folder");
        let pwfile = dir.join("password");
        std::fs::write(&pwfile, PASSWORD).expect("password file");
        if let Some((uid, gid)) = run_as {
            for p in [
                dir.parent().expect("parent"),
                dir.as_path(),
                pwfile.as_path(),
            ] {
                std::os::unix::fs::chown(p, Some(uid), Some(gid)).expect("chown");
            }
        }
        let data = dir.join("data");
        let out = as_user(Command::new(bin.join("initdb")), run_as)
            .args([
                "--no-sync",
                "--auth=scram-sha-256",
                "--encoding=UTF8",
                "--locale=C",
            ])
            .arg(format!("--username={USER}"))
            .arg(format!("--pwfile={}", pwfile.display()))
            .arg("-D")
            .arg(&data)
            .stdin(Stdio::null())
            .output()
            .expect("initdb runs");
        assert!(
            out.status.success(),
            "initdb failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        // Retry on another port when the free port was taken meanwhile.
        for _ in 0..5 {
            let pg = Postgres {
                dir: dir.clone(),
                bin: bin.clone(),
                port: free_port(),
                run_as,
                server: Mutex::new(None),
            };
            if pg.spawn_server() {
                return pg;
            }
            pg.kill();
        }
        panic!(
            "PostgreSQL did not start; its log: {}",
            std::fs::read_to_string(dir.join("server.log")).unwrap_or_default()
        );
    }

    /// One cluster shared by the tests of this process (started on first
    /// use; each test takes a [`Postgres::fresh_database`]). Tests that stop
    /// the server start their own with [`Postgres::start`].
    pub fn shared() -> &'static Postgres {
        static SHARED: std::sync::OnceLock<Postgres> = std::sync::OnceLock::new();
        SHARED.get_or_init(Postgres::start)
    }

    /// The port it listens on (127.0.0.1).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The URL of database `db` for the superuser.
    pub fn url(&self, db: &str) -> String {
        format!("postgres://{USER}:{PASSWORD}@127.0.0.1:{}/{db}", self.port)
    }

    /// Creates database `name` (a fresh, empty one) and returns its URL.
    pub fn create_database(&self, name: &str) -> String {
        self.psql("postgres", &format!("CREATE DATABASE \"{name}\""));
        self.url(name)
    }

    /// A fresh database with a name no other call in this process used.
    pub fn fresh_database(&self) -> String {
        let n = DATABASES.fetch_add(1, Ordering::Relaxed);
        self.create_database(&format!("t{n}"))
    }

    /// Runs `sql` in database `db` with `psql`; panics with its output on
    /// failure. Returns what it printed (unaligned, tuples only).
    pub fn psql(&self, db: &str, sql: &str) -> String {
        let out = Command::new(self.bin.join("psql"))
            .args(["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1"])
            .arg("-h")
            .arg("127.0.0.1")
            .arg("-p")
            .arg(self.port.to_string())
            .arg("-U")
            .arg(USER)
            .arg("-d")
            .arg(db)
            .arg("-c")
            .arg(sql)
            .env("PGPASSWORD", PASSWORD)
            .env("PGCONNECT_TIMEOUT", "10")
            .stdin(Stdio::null())
            .output()
            .expect("psql runs");
        assert!(
            out.status.success(),
            "psql {sql:?} failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// Opens a `psql` session on `db` that runs `sql` and stays connected
    /// (holding whatever `sql` took: a lock, an open transaction) until the
    /// returned value is dropped.
    pub fn session(&self, db: &str, sql: &str) -> Session {
        use std::io::Write;
        let mut child = Command::new(self.bin.join("psql"))
            .args(["-X", "-q", "-A", "-t"])
            .arg("-h")
            .arg("127.0.0.1")
            .arg("-p")
            .arg(self.port.to_string())
            .arg("-U")
            .arg(USER)
            .arg("-d")
            .arg(db)
            .env("PGPASSWORD", PASSWORD)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("psql runs");
        let mut stdin = child.stdin.take().expect("stdin");
        writeln!(stdin, "{sql}").expect("psql takes the statement");
        stdin.flush().expect("flush");
        Session {
            child,
            stdin: Some(stdin),
        }
    }

    /// Stops the server at once (a fault: `SIGQUIT`, immediate shutdown;
    /// connections drop). The data stays; [`Postgres::start_again`] brings
    /// it back on the same port.
    pub fn stop(&self) {
        self.kill();
    }

    /// Starts the stopped server again on the same port with the same data.
    pub fn start_again(&self) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while !self.spawn_server() {
            self.kill();
            assert!(
                Instant::now() < deadline,
                "PostgreSQL did not start again; its log: {}",
                std::fs::read_to_string(self.dir.join("server.log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Whether the server process runs.
    pub fn is_running(&self) -> bool {
        let mut server = self.server.lock().unwrap_or_else(|p| p.into_inner());
        match server.as_mut() {
            Some(child) => matches!(child.try_wait(), Ok(None)),
            None => false,
        }
    }

    /// The server's log so far (for a failing test's message).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("server.log")).unwrap_or_default()
    }

    /// Starts `postgres` and waits until it accepts connections; false
    /// when it exited first (the port was taken, say).
    fn spawn_server(&self) -> bool {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join("server.log"))
            .expect("server log");
        if let Some((uid, gid)) = self.run_as {
            let _ = std::os::unix::fs::chown(self.dir.join("server.log"), Some(uid), Some(gid));
        }
        let mut cmd = as_user(Command::new(self.bin.join("postgres")), self.run_as);
        cmd.arg("-D")
            .arg(self.dir.join("data"))
            .args(["-c", "listen_addresses=127.0.0.1"])
            .args(["-c", &format!("port={}", self.port)])
            .args(["-c", "unix_socket_directories="])
            // A test cluster: no fsync (a killed server still finds its WAL in the
            // page cache; commits wait for the WAL write), small memory.
            .args(["-c", "fsync=off"])
            .args(["-c", "full_page_writes=off", "-c", "shared_buffers=16MB"])
            .args(["-c", "max_connections=200"])
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log"))
            .stderr(log);
        die_with_parent(&mut cmd);
        let child = spawn_from_keeper(cmd);
        *self.server.lock().unwrap_or_else(|p| p.into_inner()) = Some(child);
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if !self.is_running() {
                return false;
            }
            let ready = Command::new(self.bin.join("pg_isready"))
                .args(["-q", "-h", "127.0.0.1", "-p", &self.port.to_string()])
                .status()
                .is_ok_and(|s| s.success());
            if ready {
                return true;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        false
    }

    fn kill(&self) {
        let mut server = self.server.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(mut child) = server.take() {
            // SIGQUIT: immediate shutdown (children too).
            // SAFETY: kill(2) with a pid this process spawned and still owns.
            unsafe {
                libc::kill(child.id() as libc::pid_t, libc::SIGQUIT);
            }
            let deadline = Instant::now() + Duration::from_secs(10);
            loop {
                match child.try_wait() {
                    Ok(Some(_)) | Err(_) => break,
                    Ok(None) if Instant::now() > deadline => {
                        let _ = child.kill();
                        let _ = child.wait();
                        break;
                    }
                    Ok(None) => std::thread::sleep(Duration::from_millis(20)),
                }
            }
        }
        // A postmaster.pid left by the immediate shutdown is stale; the
        // next start checks it against a live process and goes on.
    }
}

/// A `psql` session kept open ([`Postgres::session`]); it ends when dropped.
pub struct Session {
    child: Child,
    stdin: Option<std::process::ChildStdin>,
}

impl Drop for Session {
    fn drop(&mut self) {
        drop(self.stdin.take());
        let deadline = Instant::now() + Duration::from_secs(5);
        while matches!(self.child.try_wait(), Ok(None)) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The newest installed PostgreSQL's `bin` folder.
pub fn server_bin() -> Option<PathBuf> {
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .flatten()
        .filter_map(|e| {
            let v: u32 = e.file_name().to_str()?.parse().ok()?;
            let bin = e.path().join("bin");
            bin.join("postgres").is_file().then_some((v, bin))
        })
        .collect();
    versions.sort();
    versions.pop().map(|(_, bin)| bin)
}

/// Whether PostgreSQL's server is installed on this machine.
pub fn installed() -> bool {
    server_bin().is_some()
}

/// The folder of this machine's test clusters: under the temporary folder,
/// unless the server runs as another user (as root) and that user cannot
/// reach it (a `TMPDIR` inside root's home): then under `/tmp`, which
/// everybody can.
fn clusters_root(other_user: bool) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let tmp = std::env::temp_dir();
    let reachable = tmp
        .ancestors()
        .all(|p| std::fs::metadata(p).is_ok_and(|m| m.permissions().mode() & 0o001 != 0));
    if other_user && !reachable {
        PathBuf::from("/tmp").join(ROOT)
    } else {
        tmp.join(ROOT)
    }
}

/// As root: `nobody`'s user and group ids (PostgreSQL refuses root).
fn unprivileged_user() -> Option<(u32, u32)> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return None;
    }
    let name = std::ffi::CString::new("nobody").expect("name");
    // SAFETY: getpwnam with a valid C string; the record is read at once.
    let pw = unsafe { libc::getpwnam(name.as_ptr()) };
    assert!(
        !pw.is_null(),
        "running as root and there is no user `nobody` to run PostgreSQL as"
    );
    // SAFETY: pw is non-null and points at libc's static record.
    Some(unsafe { ((*pw).pw_uid, (*pw).pw_gid) })
}

fn as_user(mut cmd: Command, run_as: Option<(u32, u32)>) -> Command {
    if let Some((uid, gid)) = run_as {
        use std::os::unix::process::CommandExt;
        cmd.uid(uid).gid(gid).env("HOME", "/tmp").current_dir("/");
    }
    cmd.env_remove("PGDATA").env("LC_ALL", "C");
    cmd
}

/// The server gets `SIGQUIT` (immediate shutdown) when the thread that
/// started it goes: [`spawn_from_keeper`] starts every server from one
/// thread that lives as long as the test process.
fn die_with_parent(cmd: &mut Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: prctl is async-signal-safe; nothing else runs in the child.
    // It comes after the user change (std changes the user before these
    // hooks), which would otherwise clear it.
    unsafe {
        cmd.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGQUIT) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

type SpawnRequest = (Command, std::sync::mpsc::Sender<std::io::Result<Child>>);

/// Starts `cmd` from the keeper thread (never ends), so the parent-death
/// signal fires when the process ends, not when a test's thread does.
fn spawn_from_keeper(cmd: Command) -> Child {
    static KEEPER: Mutex<Option<std::sync::mpsc::Sender<SpawnRequest>>> = Mutex::new(None);
    let sender = {
        let mut keeper = KEEPER.lock().unwrap_or_else(|p| p.into_inner());
        keeper
            .get_or_insert_with(|| {
                let (tx, rx) = std::sync::mpsc::channel::<SpawnRequest>();
                std::thread::Builder::new()
                    .name("postgres-keeper".into())
                    .spawn(move || {
                        for (mut cmd, reply) in rx {
                            let _ = reply.send(cmd.spawn());
                        }
                        // Never return: the servers' parent-death signal
                        // belongs to this thread.
                        loop {
                            std::thread::park();
                        }
                    })
                    .expect("keeper thread");
                tx
            })
            .clone()
    };
    let (tx, rx) = std::sync::mpsc::channel();
    sender.send((cmd, tx)).expect("keeper alive");
    rx.recv().expect("keeper answers").expect("postgres starts")
}

/// A port nobody listens on now.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// Removes the folders of clusters whose test process is gone.
fn sweep_dead_clusters() {
    let root = clusters_root(unprivileged_user().is_some());
    let Ok(entries) = std::fs::read_dir(&root) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.split('-').next())
            .and_then(|p| p.parse::<i32>().ok())
        else {
            continue;
        };
        let alive = Path::new(&format!("/proc/{pid}")).exists();
        if !alive {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cluster_starts_answers_stops_and_comes_back_with_its_data() {
        let pg = Postgres::start();
        pg.create_database("kit");
        pg.psql("kit", "CREATE TABLE t (x int); INSERT INTO t VALUES (42)");
        assert_eq!(pg.psql("kit", "SELECT x FROM t"), "42");
        pg.stop();
        assert!(!pg.is_running());
        pg.start_again();
        assert_eq!(pg.psql("kit", "SELECT x FROM t"), "42");
        let dir = pg.dir.clone();
        drop(pg);
        assert!(!dir.exists(), "the cluster's folder goes with it");
    }
}
