//! Striping a peer's packets over the k links of a dimension.
//!
//! The seed says only that packets are spread over several networks and put back in order by
//! sequence number (hxb.md §3.6); the rule is tca's: per dimension, round robin over its k
//! links, one packet at a time. With packets of one size that loads the links equally, which is
//! what the seed's ≥ 94 % of k × link rate (Table 4) needs; the receive array restores order.

/// Round-robin link choice for each of the three dimensions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Striper {
    links_per_dim: u8,
    next: [u8; crate::coord::DIMS],
}

impl Striper {
    /// Striping over `links_per_dim` links in each dimension (at least 1).
    pub fn new(links_per_dim: u8) -> Self {
        Self { links_per_dim: links_per_dim.max(1), next: [0; crate::coord::DIMS] }
    }

    /// The port for the next packet sent in dimension `dim`: ports are numbered
    /// `dim * k + link`.
    pub fn port(&mut self, dim: usize) -> u16 {
        let link = self.next[dim];
        self.next[dim] = (link + 1) % self.links_per_dim;
        dim as u16 * u16::from(self.links_per_dim) + u16::from(link)
    }

    /// The dimension a port belongs to.
    pub fn dim_of(&self, port: u16) -> usize {
        usize::from(port / u16::from(self.links_per_dim))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_dimension_rotates_over_its_own_links() {
        let mut s = Striper::new(2);
        let ports: Vec<u16> = [0, 0, 1, 0, 2, 1, 2].iter().map(|&d| s.port(d)).collect();
        assert_eq!(ports, [0, 1, 2, 0, 4, 3, 5]);
        assert_eq!((s.dim_of(0), s.dim_of(3), s.dim_of(5)), (0, 1, 2));
    }
}
