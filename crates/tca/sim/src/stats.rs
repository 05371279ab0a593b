//! Statistics of a simulated job, for `--stats`: a line for people and a JSON object for
//! programs (totals, and per link direction the TLPs it carried, those that queued behind
//! another TLP, and its busy time).

use base::{exact_us, json_string, SimTime};
use std::fmt::Write as _;
use std::time::Duration;
use tca_model::LinkStats;

/// What a job did, taken when it ends (or at any time between requests).
#[derive(Debug, Clone)]
pub struct JobStats {
    /// Ranks of the job.
    pub ranks: u32,
    /// The world's clock.
    pub virtual_time: SimTime,
    /// Hardware events delivered.
    pub events: u64,
    /// Wall-clock time the job took.
    pub wall: Duration,
    /// Every link direction and throughput limit of the platform, in trace-track order.
    pub links: Vec<LinkStats>,
}

impl JobStats {
    /// Hardware events per wall-clock second.
    pub fn events_per_second(&self) -> f64 {
        self.events as f64 / self.wall.as_secs_f64().max(1e-9)
    }

    /// TLPs that queued behind another, over every link.
    pub fn stalled_tlps(&self) -> u64 {
        self.links.iter().map(|l| l.stalled_tlps).sum()
    }

    /// The statistics line `--stats` prints on stderr.
    pub fn line(&self) -> String {
        format!(
            "tca: simulated TCA fabric: {} ranks, virtual time {}, {} hardware events in {:.3} s wall ({:.0} events/s)",
            self.ranks,
            self.virtual_time,
            self.events,
            self.wall.as_secs_f64(),
            self.events_per_second()
        )
    }

    /// One JSON object: `ranks`, `virtual_time_us`, `hardware_events`, `wall_s`,
    /// `events_per_s`, `tlps`, `stalled_tlps`, and `links`, a list of
    /// `{"link": name, "stalled_tlps": n, "busy_us": x, "tlps": n}` (times in exact decimal
    /// microseconds).
    pub fn to_json(&self) -> String {
        let tlps: u64 = self.links.iter().map(|l| l.tlps).sum();
        let mut out = String::with_capacity(128 + 96 * self.links.len());
        let _ = write!(
            out,
            "{{\"ranks\": {}, \"virtual_time_us\": {}, \"hardware_events\": {}, \"wall_s\": {:.6}, \
             \"events_per_s\": {:.0}, \"tlps\": {tlps}, \"stalled_tlps\": {}, \"links\": [",
            self.ranks,
            exact_us(self.virtual_time),
            self.events,
            self.wall.as_secs_f64(),
            self.events_per_second(),
            self.stalled_tlps()
        );
        for (i, l) in self.links.iter().enumerate() {
            let sep = if i == 0 { "\n" } else { ",\n" };
            let _ = write!(
                out,
                "{sep}  {{\"link\": {}, \"stalled_tlps\": {}, \"busy_us\": {}, \"tlps\": {}}}",
                json_string(&l.name),
                l.stalled_tlps,
                exact_us(l.busy),
                l.tlps
            );
        }
        out.push_str("\n]}\n");
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_has_the_totals_and_one_entry_per_link() {
        let link = |name: &str, tlps, stalled_tlps, ps| LinkStats {
            name: name.into(),
            tlps,
            stalled_tlps,
            busy: SimTime::from_ps(ps),
        };
        let s = JobStats {
            ranks: 2,
            virtual_time: SimTime::from_ps(12_000_345),
            events: 40,
            wall: Duration::from_millis(2),
            links: vec![link("node0 E port -> node1", 10, 3, 1_500_000), link("a \"b\"", 0, 0, 0)],
        };
        assert_eq!(s.stalled_tlps(), 3);
        assert_eq!(s.events_per_second().round(), 20_000.0);
        let j = s.to_json();
        assert!(j.starts_with("{\"ranks\": 2, \"virtual_time_us\": 12.000345, \"hardware_events\": 40, "), "{j}");
        assert!(j.contains("\"tlps\": 10, \"stalled_tlps\": 3, \"links\": [\n"), "{j}");
        assert!(j.contains(
            "{\"link\": \"node0 E port -> node1\", \"stalled_tlps\": 3, \"busy_us\": 1.500000, \"tlps\": 10}"
        ));
        assert!(j.contains("{\"link\": \"a \\\"b\\\"\", \"stalled_tlps\": 0, \"busy_us\": 0.000000, \"tlps\": 0}"));
        assert!(j.ends_with("\n]}\n"));
        assert!(
            s.line().contains("2 ranks, virtual time 12.000345us, 40 hardware events in 0.002 s wall"),
            "{}",
            s.line()
        );
    }
}
