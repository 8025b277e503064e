use std::collections::BTreeMap;
use std::sync::mpsc;

use super::*;
use crate::inject::Injected;

fn perf() -> Vec<u8> {
    std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../nettrace/tests/data/perf.nettrace"
    ))
    .unwrap()
}

/// trace.nettrace (a real recording with sequence points), ended after its last whole block
/// (the file stops inside one).
fn dense() -> Vec<u8> {
    let mut d = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../nettrace/tests/data/trace.nettrace"
    ))
    .unwrap();
    let mut s = nettrace::Scanner::new();
    let mut end = 0;
    let _ = s.feed_all(&d, |i| end = i.end());
    d.truncate(end as usize);
    d.extend_from_slice(nettrace::end_of_stream(s.format().unwrap()));
    d
}

/// Events of a trace per (provider, id), and the total.
fn census(bytes: &[u8]) -> (BTreeMap<(String, u32), u64>, u64) {
    let mut r = nettrace::TraceReader::new(bytes).unwrap();
    let mut m = BTreeMap::new();
    while let Some(ev) = r.next_event().unwrap() {
        *m.entry((ev.provider().to_string(), ev.event_id()))
            .or_default() += 1;
    }
    (m, r.stats().events)
}

/// Feeds `data` to the tap in pieces, as the pump does (write, then flush).
fn feed(t: &mut Tap, data: &[u8], piece: usize) {
    for p in data.chunks(piece) {
        t.sink().write(p).unwrap();
        t.sink().flush().unwrap();
    }
}

/// What a consumer saw, sent when it ends.
#[derive(Debug, Default)]
struct Seen {
    started: u32,
    per_event: BTreeMap<(String, u32), u64>,
    events: u64,
    lost: Vec<Lost>,
    end: Option<End>,
}

/// Records what it sees; sends it at the end. Waits at its first event for `gate`.
struct Recorder {
    seen: Seen,
    gate: Option<mpsc::Receiver<()>>,
    done: mpsc::Sender<Seen>,
}

impl Recorder {
    fn new(gate: Option<mpsc::Receiver<()>>) -> (Recorder, mpsc::Receiver<Seen>) {
        let (tx, rx) = mpsc::channel();
        (
            Recorder {
                seen: Seen::default(),
                gate,
                done: tx,
            },
            rx,
        )
    }
}

impl EventConsumer for Recorder {
    fn start(&mut self, header: &nettrace::TraceHeader) {
        assert!(header.ticks_per_second > 0);
        self.seen.started += 1;
    }

    fn event(&mut self, ev: &nettrace::Event<'_>) -> Action {
        if let Some(g) = self.gate.take() {
            let _ = g.recv();
        }
        assert_eq!(self.seen.started, 1, "told the header before any event");
        self.seen.events += 1;
        *self
            .seen
            .per_event
            .entry((ev.provider().to_string(), ev.event_id()))
            .or_default() += 1;
        Action::Continue
    }

    fn lost(&mut self, lost: &Lost) {
        self.seen.lost.push(lost.clone());
    }

    fn end(&mut self, end: &End) {
        self.seen.end = Some(end.clone());
        let _ = self.done.send(std::mem::take(&mut self.seen));
    }
}

#[test]
fn counts_a_real_trace_fed_in_pieces() {
    let data = perf();
    let (_, expected) = census(&data);
    let mut t = Tap::new(Vec::new(), None, false);
    feed(&mut t, &data, data.len() / 40 + 1);
    let ((events, dropped), lost, _) = t.finish();
    assert_eq!((events, dropped, lost), (Some(expected), Some(0), None));
}

#[test]
fn garbage_gives_up_quietly() {
    let mut t = Tap::new(Vec::new(), None, false);
    feed(&mut t, b"not a trace at all, not even close", 7);
    assert_eq!(t.finish().0, (None, None));
}

#[test]
fn the_tap_sees_what_the_file_holds_clrspys_events_included() {
    let data = perf();
    let dir = std::env::temp_dir().join(format!("clrspy-tap-file-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("t.nettrace");
    let mut file = crate::sink::FileSink::create(&path).unwrap();
    let (rec, seen) = Recorder::new(None);
    let mut t = Tap::new(vec![Box::new(rec)], None, false);
    for (i, p) in data.chunks(4096).enumerate() {
        let sinks: [&mut dyn ByteSink; 2] = [&mut file, t.sink()];
        for s in sinks {
            s.write(p).unwrap();
            if i % 5 == 0 && s.wants_splices() {
                s.splice(
                    1_000_000 + i as u64,
                    &Injected::ThreadName {
                        tid: 42,
                        name: format!("worker {i}"),
                    },
                );
                s.splice(1_000_000 + i as u64, &Injected::Tick);
            }
            s.flush().unwrap();
        }
    }
    file.finish().unwrap();
    let _ = t.finish();
    let seen = seen.recv().unwrap();
    let (in_file, total) = census(&std::fs::read(&path).unwrap());
    let ours = in_file
        .keys()
        .filter(|(p, _)| p == crate::inject::PROVIDER)
        .count();
    assert!(ours >= 2, "clrspy's events are in the file: {in_file:?}");
    assert_eq!(seen.per_event, in_file);
    assert_eq!(seen.events, total);
    assert!(seen.lost.is_empty());
    let end = seen.end.unwrap();
    assert_eq!((end.events, end.error, end.left), (total, None, false));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_consumer_asking_to_stop_is_heard_once() {
    /// Asks to stop at the n-th event.
    struct StopAt(u64, u64);

    impl EventConsumer for StopAt {
        fn event(&mut self, _ev: &nettrace::Event<'_>) -> Action {
            self.1 += 1;
            if self.1 == self.0 {
                Action::Stop {
                    reason: format!("event {}", self.0),
                }
            } else {
                Action::Continue
            }
        }
    }
    let data = perf();
    let mut t = Tap::new(
        vec![Box::new(StopAt(10, 0)), Box::new(StopAt(20, 0))],
        None,
        false,
    );
    feed(&mut t, &data, 64 << 10);
    let (_, _, actions) = t.finish();
    assert_eq!(
        actions,
        vec![Action::Stop {
            reason: "event 10".into()
        }]
    );
}

#[test]
fn a_stalled_consumer_is_told_what_was_skipped_and_the_rest_decodes() {
    let data = dense();
    let (_, total) = census(&data);
    let sequence_points = {
        let mut r = nettrace::TraceReader::new(&data).unwrap();
        while r.next_event().unwrap().is_some() {}
        r.stats().sequence_points
    };
    assert!(sequence_points >= 2, "the test needs sequence points");
    let (release, gate) = mpsc::channel();
    let (rec, seen) = Recorder::new(Some(gate));
    let mut t = Tap::new(vec![Box::new(rec)], None, false);
    t.set_bound(256 << 10);
    // The consumer waits at its first event while a third of the trace streams past, then
    // keeps up with the rest (so the view resumes at a sequence point).
    let third = data.len() / 3;
    feed(&mut t, &data[..third], 64 << 10);
    release.send(()).unwrap();
    for p in data[third..].chunks(16 << 10) {
        while t.shared.in_flight.load(Ordering::Relaxed) > 0 {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        t.sink().write(p).unwrap();
        t.sink().flush().unwrap();
    }
    let ((events, dropped), loss, _) = t.finish();
    let seen = seen.recv().unwrap();
    let loss = loss.expect("the stalled tap skipped blocks");
    assert!(loss.blocks > 0 && loss.bytes > 0);
    assert!(!seen.lost.is_empty(), "the consumer was told");
    let told: u64 = seen.lost.iter().map(|l| l.blocks).sum();
    assert_eq!(told, loss.blocks);
    assert!(seen.lost.iter().all(|l| l.from_ns <= l.to_ns));
    let end = seen.end.unwrap();
    assert_eq!(end.error, None, "what came after the skip decoded whole");
    assert_eq!(Some(seen.events), events);
    // What the view saw and what it was told it skipped add up to the trace.
    assert_eq!(seen.events + loss.events, total, "{loss:?}");
    assert_eq!(dropped, Some(0), "the skip is not the runtime's loss");
}

#[test]
fn consumers_join_and_leave_a_running_session() {
    let data = perf();
    let (_, total) = census(&data);
    let broadcast = Broadcast::new();
    let (first, first_seen) = Recorder::new(None);
    let mut t = Tap::new(vec![Box::new(first)], Some(broadcast.clone()), true);
    let pieces: Vec<&[u8]> = data.chunks(data.len() / 10 + 1).collect();
    let (late, late_seen) = Recorder::new(None);
    let (brief, brief_seen) = Recorder::new(None);
    let (mut late, mut brief) = (Some(late), Some(brief));
    let mut brief_sub = None;
    let mut late_sub = None;
    for (i, p) in pieces.iter().enumerate() {
        t.sink().write(p).unwrap();
        t.sink().flush().unwrap();
        // Let the tap thread take the bytes before the next join or leave.
        while t.shared.in_flight.load(Ordering::Relaxed) > 0 {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
        match i {
            2 => brief_sub = brief.take().map(|b| broadcast.join(Box::new(b))),
            3 => late_sub = late.take().map(|b| broadcast.join(Box::new(b))),
            6 => drop(brief_sub.take()),
            _ => {}
        }
    }
    let _ = t.finish();
    let first = first_seen.recv().unwrap();
    let late = late_seen.recv().unwrap();
    let brief = brief_seen.recv().unwrap();
    assert_eq!(first.events, total);
    assert!(late.events > 0 && late.events < total, "{}", late.events);
    assert!(brief.events > 0 && brief.events < late.events);
    assert_eq!((late.started, brief.started), (1, 1));
    assert!(brief.end.as_ref().unwrap().left);
    assert!(!late.end.as_ref().unwrap().left);
    // After the session ended, a joiner is told the end at once.
    let (after, after_seen) = Recorder::new(None);
    let _sub = broadcast.join(Box::new(after));
    let after = after_seen.recv().unwrap();
    assert_eq!((after.events, after.started), (0, 0));
    drop(late_sub);
}
