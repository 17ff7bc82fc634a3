! Free-form Fortran with `use mpi`: complex and logical types, 2-D
! arrays, MPI_STATUSES_IGNORE, scans, gatherv, a window, a shared-memory
! window and Abort's exit status.
! Rank 0 prints "modern: ok N tasks" when every check passed.
program modern
  use mpi
  use iso_c_binding, only: c_ptr, c_f_pointer
  implicit none
  integer :: ierr, rank, size, i, errs, s
  integer :: reqs(2), counts(64), displs(64), got(64), win, cells(4)
  integer(kind=MPI_ADDRESS_KIND) :: wsize, disp, lb, ext
  integer :: row, g, gsize, node, nrank, qunit
  integer(kind=MPI_ADDRESS_KIND) :: base, qbase, qsize
  integer, pointer :: mine, first
  type(c_ptr) :: cp
  double precision :: m(4, 4), col(4)
  complex(kind=8) :: z(3), zs(3)
  real :: grid(4, 3), recv(4, 3)
  logical :: l(2)
  character(len=16) :: arg

  errs = 0
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, size, ierr)
  if (command_argument_count() > 0) then
    call get_command_argument(1, arg)
    if (arg == 'abort' .and. rank == size - 1) call MPI_Abort(MPI_COMM_WORLD, 5, ierr)
    call MPI_Barrier(MPI_COMM_WORLD, ierr)
  end if

  z = [(cmplx(rank, i, kind=8), i = 1, 3)]
  call MPI_Allreduce(z, zs, 3, MPI_DOUBLE_COMPLEX, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (zs(2) /= cmplx(size * (size - 1) / 2, 2 * size, kind=8)) errs = errs + 1

  grid = real(rank)
  call MPI_Irecv(recv, 12, MPI_REAL, modulo(rank - 1, size), 3, MPI_COMM_WORLD, reqs(1), ierr)
  call MPI_Isend(grid, 12, MPI_REAL, modulo(rank + 1, size), 3, MPI_COMM_WORLD, reqs(2), ierr)
  call MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE, ierr)
  if (any(recv /= real(modulo(rank - 1, size)))) errs = errs + 1

  l = [rank == 0, .true.]
  call MPI_Allreduce(MPI_IN_PLACE, l, 2, MPI_LOGICAL, MPI_LAND, MPI_COMM_WORLD, ierr)
  if (l(1) .neqv. (size == 1) .or. .not. l(2)) errs = errs + 1

  call MPI_Scan(rank + 1, s, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (s /= (rank + 1) * (rank + 2) / 2) errs = errs + 1

  ! Rank r sends r + 1 copies of r.
  got = -1
  counts(1:size) = [(i, i = 1, size)]
  displs(1:size) = [(i * (i - 1) / 2, i = 1, size)]
  call MPI_Gatherv([(rank, i = 0, rank)], rank + 1, MPI_INTEGER, got, counts, displs, &
                   MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
  if (rank == 0) then
    do i = 1, size
      if (any(got(displs(i) + 1:displs(i) + i) /= i - 1)) errs = errs + 1
    end do
  end if

  ! A derived type: row 2 of a column-major 4x4 matrix (stride 4), sent
  ! to ourselves into a contiguous array; a group of the world.
  m = reshape([(dble(i), i = 1, 16)], [4, 4])
  call MPI_Type_vector(4, 1, 4, MPI_DOUBLE_PRECISION, row, ierr)
  call MPI_Type_commit(row, ierr)
  call MPI_Type_get_extent(row, lb, ext, ierr)
  if (lb /= 0 .or. ext /= 13 * 8) errs = errs + 1
  call MPI_Sendrecv(m(2, 1), 1, row, rank, 9, col, 4, MPI_DOUBLE_PRECISION, rank, 9, &
                    MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
  if (any(col /= [2d0, 6d0, 10d0, 14d0])) errs = errs + 1
  call MPI_Type_free(row, ierr)
  if (row /= MPI_DATATYPE_NULL) errs = errs + 1
  call MPI_Comm_group(MPI_COMM_WORLD, g, ierr)
  call MPI_Group_size(g, gsize, ierr)
  if (gsize /= size) errs = errs + 1
  call MPI_Group_free(g, ierr)

  ! One-sided: every rank puts its rank into cell 2 of the next one.
  cells = -1
  wsize = 16
  call MPI_Win_create(cells, wsize, 4, MPI_INFO_NULL, MPI_COMM_WORLD, win, ierr)
  call MPI_Win_fence(0, win, ierr)
  disp = 1
  call MPI_Put(rank, 1, MPI_INTEGER, modulo(rank + 1, size), disp, 1, MPI_INTEGER, win, ierr)
  call MPI_Win_fence(0, win, ierr)
  if (cells(2) /= modulo(rank - 1, size) .or. cells(1) /= -1) errs = errs + 1
  call MPI_Win_free(win, ierr)
  if (win /= MPI_WIN_NULL) errs = errs + 1

  ! A shared-memory window of this node's tasks, one integer each: the
  ! first one's, seen through MPI_Win_shared_query, holds what it stored.
  call MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, node, ierr)
  call MPI_Comm_rank(node, nrank, ierr)
  wsize = 4
  call MPI_Win_allocate_shared(wsize, 4, MPI_INFO_NULL, node, base, win, ierr)
  cp = transfer(base, cp)
  call c_f_pointer(cp, mine)
  mine = 100 + nrank
  call MPI_Win_fence(0, win, ierr)
  call MPI_Win_shared_query(win, 0, qsize, qunit, qbase, ierr)
  cp = transfer(qbase, cp)
  call c_f_pointer(cp, first)
  if (first /= 100 .or. qsize /= 4 .or. qunit /= 4) errs = errs + 1
  call MPI_Win_fence(0, win, ierr)
  call MPI_Win_free(win, ierr)
  call MPI_Comm_free(node, ierr)

  call MPI_Allreduce(MPI_IN_PLACE, errs, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank == 0) then
    if (errs == 0) then
      write (*, '(a, i0, a)') 'modern: ok ', size, ' tasks'
    else
      write (*, '(a, i0, a)') 'modern: ', errs, ' errors'
    end if
  end if
  call MPI_Finalize(ierr)
end program modern
