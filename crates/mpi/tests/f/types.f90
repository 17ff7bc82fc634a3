! Fortran names whose arguments are arrays of handles or of addresses:
! Type_create_struct, Type_create_hindexed(_block), Alltoallw and
! Ialltoallw (a datatype per peer), Group_range_incl/excl, and
! Buffer_attach/detach around a buffered send; the MPI_Count (_x) forms
! and statuses set by the program.
! Rank 0 prints "ftypes: ok N tasks" when every check passed.
program ftypes
  use mpi
  implicit none
  integer :: ierr, rank, size, errs, all, i, st, hi, hb, g, sub, n, req
  integer :: bls(2), types(2), ranges(3, 1), stat(MPI_STATUS_SIZE)
  integer(kind=MPI_ADDRESS_KIND) :: displs(2), lb, extent
  integer(kind=MPI_COUNT_KIND) :: c8, l8, e8
  logical :: flag
  integer :: pair(3), got(3), ints(6)
  integer, allocatable :: sc(:), sd(:), stt(:), rc(:), rd(:), rtt(:), sbuf(:), rbuf(:)
  character :: pool(1024)

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, size, ierr)
  errs = 0

  ! A struct of one integer and a pair of integers 8 bytes on.
  bls = (/ 1, 2 /)
  displs = (/ 0_MPI_ADDRESS_KIND, 8_MPI_ADDRESS_KIND /)
  types = (/ MPI_INTEGER, MPI_INTEGER /)
  call MPI_Type_create_struct(2, bls, displs, types, st, ierr)
  call MPI_Type_commit(st, ierr)
  call MPI_Type_size(st, n, ierr)
  call MPI_Type_get_extent(st, lb, extent, ierr)
  if (ierr /= MPI_SUCCESS .or. n /= 12 .or. extent /= 16) errs = errs + 1
  ! The MPI_Count forms, and a status the program fills.
  call MPI_Type_size_x(st, c8, ierr)
  call MPI_Type_get_extent_x(st, l8, e8, ierr)
  if (ierr /= MPI_SUCCESS .or. c8 /= 12 .or. l8 /= 0 .or. e8 /= 16) errs = errs + 1
  call MPI_Type_get_true_extent_x(st, l8, e8, ierr)
  if (ierr /= MPI_SUCCESS .or. e8 /= 16) errs = errs + 1
  call MPI_Status_set_elements_x(stat, st, 7_MPI_COUNT_KIND, ierr)
  call MPI_Get_elements_x(stat, st, c8, ierr)
  if (ierr /= MPI_SUCCESS .or. c8 /= 7) errs = errs + 1
  call MPI_Status_set_elements(stat, st, 6, ierr)
  call MPI_Get_count(stat, st, n, ierr)
  if (ierr /= MPI_SUCCESS .or. n /= 2) errs = errs + 1
  call MPI_Status_set_cancelled(stat, .true., ierr)
  call MPI_Test_cancelled(stat, flag, ierr)
  if (ierr /= MPI_SUCCESS .or. .not. flag) errs = errs + 1
  call MPI_Type_free(st, ierr)
  call MPI_Type_match_size(MPI_TYPECLASS_REAL, 8, st, ierr)
  if (ierr /= MPI_SUCCESS .or. st /= MPI_REAL8) errs = errs + 1
  call MPI_Status_set_tag(stat, 9, ierr)
  call MPI_Status_get_tag(stat, n, ierr)
  if (ierr /= MPI_SUCCESS .or. n /= 9 .or. stat(MPI_TAG) /= 9) errs = errs + 1
  call MPI_Pcontrol(1, ierr)

  ! hindexed: ints 1 and 3 (byte displacements 0 and 8); hindexed_block
  ! the same with one block length.
  bls = (/ 1, 1 /)
  call MPI_Type_create_hindexed(2, bls, displs, MPI_INTEGER, hi, ierr)
  call MPI_Type_commit(hi, ierr)
  call MPI_Type_create_hindexed_block(2, 1, displs, MPI_INTEGER, hb, ierr)
  call MPI_Type_commit(hb, ierr)
  ints = (/ 11, 12, 13, 14, 15, 16 /)
  pair = 0
  call MPI_Sendrecv(ints, 1, hi, rank, 5, pair, 2, MPI_INTEGER, rank, 5, &
                    MPI_COMM_WORLD, stat, ierr)
  if (pair(1) /= 11 .or. pair(2) /= 13) errs = errs + 1
  pair = 0
  call MPI_Sendrecv(ints, 1, hb, rank, 6, pair, 2, MPI_INTEGER, rank, 6, &
                    MPI_COMM_WORLD, stat, ierr)
  if (pair(1) /= 11 .or. pair(2) /= 13) errs = errs + 1
  call MPI_Type_free(hi, ierr)
  call MPI_Type_free(hb, ierr)

  ! Alltoallw: to every peer one integer (rank * 100 + peer), typed.
  allocate(sc(size), sd(size), stt(size), rc(size), rd(size), rtt(size))
  allocate(sbuf(size), rbuf(size))
  do i = 1, size
    sc(i) = 1
    rc(i) = 1
    sd(i) = (i - 1) * 4
    rd(i) = (i - 1) * 4
    stt(i) = MPI_INTEGER
    rtt(i) = MPI_INTEGER
    sbuf(i) = rank * 100 + (i - 1)
  end do
  rbuf = -1
  call MPI_Alltoallw(sbuf, sc, sd, stt, rbuf, rc, rd, rtt, MPI_COMM_WORLD, ierr)
  do i = 1, size
    if (rbuf(i) /= (i - 1) * 100 + rank) errs = errs + 1
  end do
  rbuf = -1
  call MPI_Ialltoallw(sbuf, sc, sd, stt, rbuf, rc, rd, rtt, MPI_COMM_WORLD, req, ierr)
  call MPI_Wait(req, stat, ierr)
  do i = 1, size
    if (rbuf(i) /= (i - 1) * 100 + rank) errs = errs + 1
  end do

  ! Ranges: the even ranks, and the rest.
  call MPI_Comm_group(MPI_COMM_WORLD, g, ierr)
  ranges(1, 1) = 0
  ranges(2, 1) = size - 1
  ranges(3, 1) = 2
  call MPI_Group_range_incl(g, 1, ranges, sub, ierr)
  call MPI_Group_size(sub, n, ierr)
  if (ierr /= MPI_SUCCESS .or. n /= (size + 1) / 2) errs = errs + 1
  call MPI_Group_free(sub, ierr)
  call MPI_Group_range_excl(g, 1, ranges, sub, ierr)
  call MPI_Group_size(sub, n, ierr)
  if (ierr /= MPI_SUCCESS .or. n /= size / 2) errs = errs + 1
  call MPI_Group_free(sub, ierr)
  call MPI_Group_free(g, ierr)

  ! A buffered send to oneself, then the buffer detached (its size back).
  call MPI_Buffer_attach(pool, 1024, ierr)
  got = 0
  call MPI_Bsend(ints, 3, MPI_INTEGER, rank, 7, MPI_COMM_WORLD, ierr)
  call MPI_Recv(got, 3, MPI_INTEGER, rank, 7, MPI_COMM_WORLD, stat, ierr)
  if (got(3) /= 13) errs = errs + 1
  n = 0
  call MPI_Buffer_detach(pool, n, ierr)
  if (ierr /= MPI_SUCCESS .or. n /= 1024) errs = errs + 1

  call MPI_Allreduce(errs, all, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank == 0 .and. all == 0) print '(a,i0,a)', 'ftypes: ok ', size, ' tasks'
  if (rank == 0 .and. all /= 0) print '(a,i0)', 'ftypes: errors ', all
  call MPI_Finalize(ierr)
end program ftypes
