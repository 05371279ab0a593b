use crate::SimTime;
use std::fmt::Write as _;

/// A track (one row in Perfetto / chrome://tracing): a port, a DMA channel, a link direction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TrackId(pub u32);

/// Trace spans recorded during one or more simulation runs, written as Chrome trace-event JSON.
///
/// Each run opens a *process* (e.g. one point of a benchmark sweep) holding its *tracks*.
/// Timestamps are written as exact decimal microseconds, so equal runs give byte-identical files.
/// At most `max_spans` spans are kept; later ones are counted and reported in the metadata.
pub struct Trace {
    processes: Vec<String>,
    tracks: Vec<(u32, String)>,
    spans: Vec<Span>,
    max_spans: usize,
    dropped: u64,
}

struct Span {
    track: TrackId,
    name: String,
    start: SimTime,
    end: SimTime,
}

impl Default for Trace {
    fn default() -> Self {
        Self::new()
    }
}

impl Trace {
    /// Default limit on stored spans (a few hundred MB of JSON at most).
    pub const DEFAULT_MAX_SPANS: usize = 1_000_000;

    /// An empty trace keeping up to [`Self::DEFAULT_MAX_SPANS`] spans.
    pub fn new() -> Self {
        Self::with_limit(Self::DEFAULT_MAX_SPANS)
    }

    /// An empty trace keeping up to `max_spans` spans.
    pub fn with_limit(max_spans: usize) -> Self {
        Self { processes: vec![], tracks: vec![], spans: vec![], max_spans, dropped: 0 }
    }

    /// Starts a new process group; tracks created afterwards belong to it.
    pub fn process(&mut self, name: &str) {
        self.processes.push(name.to_owned());
    }

    /// Creates a track named `name` in the current process.
    pub fn track(&mut self, name: &str) -> TrackId {
        if self.processes.is_empty() {
            self.process("simulation");
        }
        let pid = (self.processes.len() - 1) as u32;
        self.tracks.push((pid, name.to_owned()));
        TrackId((self.tracks.len() - 1) as u32)
    }

    /// Records a complete span.
    pub fn span(&mut self, track: TrackId, name: &str, start: SimTime, end: SimTime) {
        if self.spans.len() >= self.max_spans {
            self.dropped += 1;
            return;
        }
        self.spans.push(Span { track, name: name.to_owned(), start, end });
    }

    /// Spans stored (at most the limit).
    pub fn span_count(&self) -> usize {
        self.spans.len()
    }

    /// Spans that did not fit under the limit.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// The trace as Chrome trace-event JSON (`{"traceEvents": [...]}`).
    pub fn to_json(&self) -> String {
        let mut out = String::with_capacity(64 + self.spans.len() * 96);
        out.push_str("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n");
        let mut first = true;
        let mut sep = |out: &mut String| {
            if !first {
                out.push_str(",\n");
            }
            first = false;
        };
        for (pid, name) in self.processes.iter().enumerate() {
            sep(&mut out);
            let _ = write!(
                out,
                "{{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":{pid},\"tid\":0,\"args\":{{\"name\":{}}}}}",
                json_string(name)
            );
            sep(&mut out);
            let _ = write!(
                out,
                "{{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":{pid},\"tid\":0,\"args\":{{\"sort_index\":{pid}}}}}"
            );
        }
        for (tid, (pid, name)) in self.tracks.iter().enumerate() {
            sep(&mut out);
            let _ = write!(
                out,
                "{{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":{pid},\"tid\":{tid},\"args\":{{\"name\":{}}}}}",
                json_string(name)
            );
        }
        for s in &self.spans {
            let pid = self.tracks[s.track.0 as usize].0;
            sep(&mut out);
            let _ = write!(
                out,
                "{{\"ph\":\"X\",\"name\":{},\"pid\":{pid},\"tid\":{},\"ts\":{},\"dur\":{}}}",
                json_string(&s.name),
                s.track.0,
                exact_us(s.start),
                exact_us(s.end.saturating_sub(s.start))
            );
        }
        out.push_str("\n],\"metadata\":{\"time_unit\":\"us\",\"dropped_spans\":");
        let _ = writeln!(out, "{}}}}}", self.dropped);
        out
    }
}

/// Microseconds with every picosecond, as the trace and statistics files write times: `12.000345`.
pub fn exact_us(t: SimTime) -> String {
    let ps = t.as_ps();
    format!("{}.{:06}", ps / 1_000_000, ps % 1_000_000)
}

/// `s` as a JSON string literal (quotes, backslashes and control characters escaped).
pub fn json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_metadata_and_spans_with_exact_timestamps() {
        let mut t = Trace::new();
        t.process("size 4096 B");
        let link = t.track("N up");
        t.span(link, "MWr 256 B", SimTime::from_ps(1_500), SimTime::from_ps(65_500));
        let json = t.to_json();
        assert!(json.contains("\"process_name\",\"pid\":0,\"tid\":0,\"args\":{\"name\":\"size 4096 B\"}"));
        assert!(json.contains("\"thread_name\",\"pid\":0,\"tid\":0,\"args\":{\"name\":\"N up\"}"));
        assert!(json.contains("\"ts\":0.001500,\"dur\":0.064000"));
        assert!(json.trim_end().ends_with("\"dropped_spans\":0}}"));
    }

    #[test]
    fn counts_spans_over_the_limit() {
        let mut t = Trace::with_limit(1);
        let k = t.track("k");
        t.span(k, "a", SimTime::ZERO, SimTime::ZERO);
        t.span(k, "b", SimTime::ZERO, SimTime::ZERO);
        assert_eq!((t.span_count(), t.dropped()), (1, 1));
    }

    #[test]
    fn escapes_names() {
        assert_eq!(json_string("a\"b\\c\n"), "\"a\\\"b\\\\c\\u000a\"");
    }
}
