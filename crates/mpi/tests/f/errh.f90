! The program's own error handler, error class, code and string, from
! Fortran: the handler is a subroutine of the communicator and the code.
! Rank 0 prints "ferrh: ok N tasks" when every check passed.
module seen
  implicit none
  integer :: calls = 0, last = 0, who = 0
contains
  subroutine on_comm(comm, code)
    integer :: comm, code
    calls = calls + 1
    last = code
    who = comm
  end subroutine on_comm
end module seen

program ferrh
  use mpi
  use seen
  implicit none
  integer :: ierr, rank, size, errs, all, dup, eh, x, cls, code, c, n
  character(len=MPI_MAX_ERROR_STRING) :: s

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, size, ierr)
  errs = 0

  call MPI_Comm_dup(MPI_COMM_WORLD, dup, ierr)
  call MPI_Comm_create_errhandler(on_comm, eh, ierr)
  call MPI_Comm_set_errhandler(dup, eh, ierr)
  x = 0
  call MPI_Send(x, 1, MPI_INTEGER, size + 5, 0, dup, ierr)
  if (ierr /= MPI_ERR_RANK .or. calls /= 1 .or. last /= MPI_ERR_RANK .or. who /= dup) errs = errs + 1
  call MPI_Errhandler_free(eh, ierr)
  if (ierr /= MPI_SUCCESS .or. eh /= MPI_ERRHANDLER_NULL) errs = errs + 1

  call MPI_Add_error_class(cls, ierr)
  call MPI_Add_error_code(cls, code, ierr)
  if (ierr /= MPI_SUCCESS .or. cls <= MPI_ERR_LASTCODE .or. code <= cls) errs = errs + 1
  call MPI_Add_error_string(code, 'a failure of our own   ', ierr)
  call MPI_Error_string(code, s, n, ierr)
  if (ierr /= MPI_SUCCESS .or. s(1:n) /= 'a failure of our own') errs = errs + 1
  call MPI_Error_class(code, c, ierr)
  if (c /= cls) errs = errs + 1
  call MPI_Comm_call_errhandler(dup, code, ierr)
  if (ierr /= MPI_SUCCESS .or. calls /= 2 .or. last /= code) errs = errs + 1
  call MPI_Comm_free(dup, ierr)

  call MPI_Allreduce(errs, all, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank == 0 .and. all == 0) print '(a, i0, a)', 'ferrh: ok ', size, ' tasks'
  call MPI_Finalize(ierr)
  if (all /= 0) stop 1
end program ferrh
