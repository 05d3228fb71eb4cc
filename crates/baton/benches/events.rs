//! Event latency across processes: this process appends events to a
//! repository's log (as any baton process does); a separate `baton
//! dashboard` process follows the log and streams to an SSE subscriber.
//! Measured: append → the subscriber has the event, one at a time (p50,
//! p95, p99, max), and a burst of 1,000 appends (all delivered, in order).
//!
//! `cargo bench -p baton --bench events` (the release binary). Not run in CI;
//! the numbers go into the README.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use baton_events::{EventKind, EventLog, EventRecord};

const SAMPLES: usize = 400;
const BURST: usize = 1000;

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}

fn main() {
    let repo = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir(repo.path().join(".git")).expect(".git");
    let mut server = Command::new(env!("CARGO_BIN_EXE_baton"))
        .args(["dashboard", "--port", "0"])
        .current_dir(repo.path())
        .env("BATON_FSYNC", "off")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("baton dashboard");
    let mut stderr = BufReader::new(server.stderr.take().expect("stderr"));
    let mut line = String::new();
    stderr.read_line(&mut line).expect("address line");
    let addr = line
        .split("http://")
        .nth(1)
        .and_then(|r| r.split('/').next())
        .expect("address")
        .to_string();
    std::thread::spawn(move || {
        let mut sink = String::new();
        let _ = std::io::Read::read_to_string(&mut stderr, &mut sink);
    });

    let mut stream = TcpStream::connect(&addr).expect("connect");
    stream.set_nodelay(true).ok();
    write!(stream, "GET /events HTTP/1.1\r\nHost: {addr}\r\n\r\n").expect("request");
    let mut sse = BufReader::new(stream);
    let mut next_data = move || -> EventRecord {
        let mut l = String::new();
        loop {
            l.clear();
            sse.read_line(&mut l).expect("stream open");
            if let Some(d) = l.strip_prefix("data: ") {
                return serde_json::from_str(d.trim()).expect("record");
            }
        }
    };

    let log_path = repo.path().join(".baton/events/events.jsonl");
    let mut log = EventLog::open(&log_path, 8 << 20, 3).expect("log");
    let record = |i: usize| {
        EventRecord::new(
            EventKind::PhaseStart,
            "phase-1",
            "bench",
            ".specs/20260101-bench",
        )
        .with_detail(format!("sample-{i}"))
    };
    // Warm up: the follower and the connection are live.
    log.append(&record(usize::MAX)).expect("append");
    while next_data().detail.as_deref() != Some(&format!("sample-{}", usize::MAX)) {}

    let mut samples = Vec::with_capacity(SAMPLES);
    for i in 0..SAMPLES {
        let t0 = Instant::now();
        log.append(&record(i)).expect("append");
        let got = next_data();
        samples.push(t0.elapsed());
        assert_eq!(got.detail.as_deref(), Some(format!("sample-{i}").as_str()));
        // Spaced out, as real events are: each one is its own wake-up.
        std::thread::sleep(Duration::from_millis(5));
    }
    samples.sort();
    println!(
        "event latency, append in this process → SSE subscriber of `baton dashboard` ({SAMPLES} events, one at a time):"
    );
    println!(
        "  p50 {}  p95 {}  p99 {}  max {}",
        ms(percentile(&samples, 0.50)),
        ms(percentile(&samples, 0.95)),
        ms(percentile(&samples, 0.99)),
        ms(*samples.last().expect("samples"))
    );

    let t0 = Instant::now();
    for i in 0..BURST {
        log.append(&record(SAMPLES + i)).expect("append");
    }
    let written = t0.elapsed();
    for i in 0..BURST {
        let got = next_data();
        assert_eq!(
            got.detail.as_deref(),
            Some(format!("sample-{}", SAMPLES + i).as_str()),
            "in order"
        );
    }
    println!(
        "burst: {BURST} events appended in {}, all delivered in order after {}",
        ms(written),
        ms(t0.elapsed())
    );
    let _ = server.kill();
    let _ = server.wait();
}
