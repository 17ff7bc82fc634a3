//! Cartesian topologies for Fortran (`LOGICAL` arrays are 4-byte 0/1,
//! as C's int arrays).

use super::super::topo::*;
use super::fortran;

fortran!(
    /// `MPI_DIMS_CREATE`.
    mpi_dims_create_ => MPI_Dims_create; nnodes: v, nd: v, dims: p);
fortran!(
    /// `MPI_CART_CREATE`.
    mpi_cart_create_ => MPI_Cart_create;
    comm: h, nd: v, dims: p, periods: p, reorder: v, cart: o);
fortran!(
    /// `MPI_CART_GET`.
    mpi_cart_get_ => MPI_Cart_get; comm: h, maxdims: v, dims: p, periods: p, coords: p);
fortran!(
    /// `MPI_CARTDIM_GET`.
    mpi_cartdim_get_ => MPI_Cartdim_get; comm: h, nd: p);
fortran!(
    /// `MPI_CART_RANK`.
    mpi_cart_rank_ => MPI_Cart_rank; comm: h, coords: p, rank: p);
fortran!(
    /// `MPI_CART_COORDS`.
    mpi_cart_coords_ => MPI_Cart_coords; comm: h, rank: v, maxdims: v, coords: p);
fortran!(
    /// `MPI_CART_SHIFT`.
    mpi_cart_shift_ => MPI_Cart_shift; comm: h, direction: v, disp: v, source: p, dest: p);
fortran!(
    /// `MPI_CART_SUB`.
    mpi_cart_sub_ => MPI_Cart_sub; comm: h, remain: p, newcomm: o);
fortran!(
    /// `MPI_TOPO_TEST`.
    mpi_topo_test_ => MPI_Topo_test; comm: h, status: p);

// The profiling interface (`pmpi_…_`) of the functions above (build.rs).
include!(concat!(env!("OUT_DIR"), "/pmpi_fortran_topo.rs"));
