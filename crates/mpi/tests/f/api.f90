! The calls beyond point-to-point and collectives from Fortran: names,
! attributes with the predefined and a Fortran copy callback, info,
! Comm_split_type, an intercommunicator and its merge, nonblocking
! collectives with Waitsome, a user operation, Reduce_local, a
! neighbourhood collective and an unweighted distributed graph.
! Rank 0 prints "fapi: ok N tasks" when every check passed.
module fapi_callbacks
  implicit none
contains
  subroutine plus_one(oldcomm, keyval, extra, vin, vout, flag, ierr)
    use mpi
    integer :: oldcomm, keyval, ierr
    integer(kind=MPI_ADDRESS_KIND) :: extra, vin, vout
    logical :: flag
    vout = vin + extra
    flag = .true.
    ierr = MPI_SUCCESS
  end subroutine plus_one

  subroutine maxabs(invec, inoutvec, n, dt)
    integer :: n, dt, i
    integer :: invec(n), inoutvec(n)
    do i = 1, n
      inoutvec(i) = max(abs(invec(i)), abs(inoutvec(i)))
    end do
  end subroutine maxabs
end module fapi_callbacks

program fapi
  use mpi
  use fapi_callbacks
  implicit none
  integer :: ierr, rank, size, errs, len, key, key2, dup, info, n, node, nsize
  integer :: half, ic, merged, mrank, reqs(2), idx(2), outc, op, i, g, ring, nb(2)
  integer :: vals(2), sums(2), a(3), b(3), all, dg, indeg, outdeg, srcs(1), dsts(1)
  integer(kind=MPI_ADDRESS_KIND) :: v
  logical :: flag
  character(len=MPI_MAX_OBJECT_NAME) :: name
  character(len=64) :: val

  errs = 0
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, size, ierr)

  call MPI_Comm_get_name(MPI_COMM_WORLD, name, len, ierr)
  if (name /= 'MPI_COMM_WORLD' .or. len /= 14) errs = errs + 1
  call MPI_Comm_dup(MPI_COMM_WORLD, dup, ierr)
  call MPI_Comm_set_name(dup, 'fortran dup  ', ierr)
  call MPI_Comm_get_name(dup, name, len, ierr)
  if (name /= 'fortran dup' .or. len /= 11) errs = errs + 1

  call MPI_Comm_create_keyval(MPI_COMM_DUP_FN, MPI_COMM_NULL_DELETE_FN, key, 0_MPI_ADDRESS_KIND, ierr)
  call MPI_Comm_create_keyval(plus_one, MPI_COMM_NULL_DELETE_FN, key2, 5_MPI_ADDRESS_KIND, ierr)
  call MPI_Comm_set_attr(dup, key, 1234_MPI_ADDRESS_KIND, ierr)
  call MPI_Comm_set_attr(dup, key2, 10_MPI_ADDRESS_KIND, ierr)
  call MPI_Comm_get_attr(dup, key, v, flag, ierr)
  if (.not. flag .or. v /= 1234) errs = errs + 1
  call MPI_Comm_free(dup, ierr)
  call MPI_Comm_dup(MPI_COMM_WORLD, dup, ierr)
  call MPI_Comm_set_attr(MPI_COMM_WORLD, key2, 20_MPI_ADDRESS_KIND, ierr)
  call MPI_Comm_free(dup, ierr)
  call MPI_Comm_dup(MPI_COMM_WORLD, dup, ierr)
  call MPI_Comm_get_attr(dup, key2, v, flag, ierr)
  if (.not. flag .or. v /= 25) errs = errs + 1
  call MPI_Comm_get_attr(dup, MPI_TAG_UB, v, flag, ierr)
  if (.not. flag .or. v < 32767) errs = errs + 1
  call MPI_Comm_delete_attr(MPI_COMM_WORLD, key2, ierr)
  call MPI_Comm_free_keyval(key, ierr)
  call MPI_Comm_free_keyval(key2, ierr)
  if (key /= MPI_KEYVAL_INVALID) errs = errs + 1

  call MPI_Info_create(info, ierr)
  call MPI_Info_set(info, 'colour', 'blue', ierr)
  call MPI_Info_get_nkeys(info, n, ierr)
  call MPI_Info_get(info, 'colour', 64, val, flag, ierr)
  if (n /= 1 .or. .not. flag .or. val /= 'blue') errs = errs + 1
  call MPI_Info_get_valuelen(info, 'colour', len, flag, ierr)
  if (len /= 4) errs = errs + 1
  call MPI_Info_get_nthkey(info, 0, val, ierr)
  if (val /= 'colour') errs = errs + 1
  len = 64
  val = ''
  call MPI_Info_get_string(info, 'colour', len, val, flag, ierr)
  if (.not. flag .or. len /= 4 .or. val /= 'blue') errs = errs + 1
  call MPI_Info_free(info, ierr)
  if (info /= MPI_INFO_NULL) errs = errs + 1

  call MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, node, ierr)
  call MPI_Comm_size(node, nsize, ierr)
  if (nsize < 1 .or. nsize > size) errs = errs + 1
  call MPI_Comm_free(node, ierr)

  if (size > 1) then
    call MPI_Comm_split(MPI_COMM_WORLD, mod(rank, 2), rank, half, ierr)
    call MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, 1 - mod(rank, 2), 9, ic, ierr)
    call MPI_Comm_test_inter(ic, flag, ierr)
    if (.not. flag) errs = errs + 1
    call MPI_Intercomm_merge(ic, mod(rank, 2) == 1, merged, ierr)
    call MPI_Comm_rank(merged, mrank, ierr)
    if (mrank /= rank / 2 + mod(rank, 2) * ((size + 1) / 2)) errs = errs + 1
    call MPI_Comm_free(merged, ierr)
    call MPI_Comm_free(ic, ierr)
    call MPI_Comm_free(half, ierr)
  end if

  vals = [rank, 1]
  call MPI_Ibcast(vals(2), 1, MPI_INTEGER, 0, dup, reqs(1), ierr)
  call MPI_Iallreduce(vals(1), sums(1), 1, MPI_INTEGER, MPI_SUM, dup, reqs(2), ierr)
  outc = 0
  n = 0
  do while (n < 2)
    call MPI_Waitsome(2, reqs, outc, idx, MPI_STATUSES_IGNORE, ierr)
    do i = 1, outc
      if (idx(i) < 1 .or. idx(i) > 2) errs = errs + 1
    end do
    n = n + outc
  end do
  if (sums(1) /= size * (size - 1) / 2) errs = errs + 1

  ! Rank 0 blocks in a receive that rank 1 sends only once its Iallreduce
  ! completed: the collective progresses inside the receive.
  if (size > 1) then
    vals = [rank + 1, -1]
    call MPI_Iallreduce(vals(1), sums(2), 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, reqs(1), ierr)
    if (rank == 0) then
      call MPI_Recv(vals(2), 1, MPI_INTEGER, 1, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
      call MPI_Wait(reqs(1), MPI_STATUS_IGNORE, ierr)
      if (vals(2) /= 42) errs = errs + 1
    else
      call MPI_Wait(reqs(1), MPI_STATUS_IGNORE, ierr)
      if (rank == 1) call MPI_Send(42, 1, MPI_INTEGER, 0, 5, MPI_COMM_WORLD, ierr)
    end if
    if (sums(2) /= size * (size + 1) / 2) errs = errs + 1
  end if

  call MPI_Op_create(maxabs, .true., op, ierr)
  a = [-rank, rank, -7]
  call MPI_Allreduce(a, b, 3, MPI_INTEGER, op, MPI_COMM_WORLD, ierr)
  ! One task: the operation is never called, b is a.
  if (b(1) /= size - 1 .or. abs(b(3)) /= 7 .or. (size > 1 .and. b(3) /= 7)) errs = errs + 1
  i = b(3)
  call MPI_Reduce_local(a, b, 3, MPI_INTEGER, MPI_SUM, ierr)
  if (b(3) /= i - 7) errs = errs + 1
  call MPI_Op_free(op, ierr)

  call MPI_Cart_create(MPI_COMM_WORLD, 1, [size], [.true.], .false., ring, ierr)
  call MPI_Neighbor_allgather(rank, 1, MPI_INTEGER, nb, 1, MPI_INTEGER, ring, ierr)
  if (nb(1) /= modulo(rank - 1, size) .or. nb(2) /= modulo(rank + 1, size)) errs = errs + 1
  call MPI_Comm_free(ring, ierr)

  call MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, [modulo(rank - 1, size)], MPI_UNWEIGHTED, &
                                      1, [modulo(rank + 1, size)], MPI_UNWEIGHTED, MPI_INFO_NULL, &
                                      .false., dg, ierr)
  call MPI_Dist_graph_neighbors_count(dg, indeg, outdeg, flag, ierr)
  if (indeg /= 1 .or. outdeg /= 1 .or. flag) errs = errs + 1
  call MPI_Dist_graph_neighbors(dg, 1, srcs, MPI_UNWEIGHTED, 1, dsts, MPI_UNWEIGHTED, ierr)
  if (srcs(1) /= modulo(rank - 1, size) .or. dsts(1) /= modulo(rank + 1, size)) errs = errs + 1
  call MPI_Comm_free(dg, ierr)
  call MPI_Comm_free(dup, ierr)

  call MPI_Comm_group(MPI_COMM_WORLD, g, ierr)
  call MPI_Group_union(g, g, node, ierr)
  call MPI_Group_compare(g, node, n, ierr)
  if (n /= MPI_IDENT) errs = errs + 1
  call MPI_Group_free(node, ierr)
  call MPI_Group_free(g, ierr)
  v = MPI_Aint_add(100_MPI_ADDRESS_KIND, 5_MPI_ADDRESS_KIND)
  if (v /= 105 .or. MPI_Aint_diff(v, 5_MPI_ADDRESS_KIND) /= 100) errs = errs + 1

  call MPI_Allreduce(errs, all, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank == 0 .and. all == 0) print '(a,i0,a)', 'fapi: ok ', size, ' tasks'
  call MPI_Finalize(ierr)
end program fapi
