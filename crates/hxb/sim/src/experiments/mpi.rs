//! mpi
