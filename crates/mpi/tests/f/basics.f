! Fixed-form Fortran 77 with mpif.h: point-to-point, requests, status
! fields, collectives, communicators, strings and error codes. Rank 0
! prints "basics: ok N tasks" when every check passed.
      program basics
      implicit none
      include 'mpif.h'
      integer ierr, rank, size, next, prev, val, i, n, cnt, idx
      integer st(MPI_STATUS_SIZE), sts(MPI_STATUS_SIZE, 2)
      integer reqs(2), buf(2), half, hrank, hsize, dup, res
      integer errs, len, cls, gat(64), one(64)
      double precision t0, t1, a(4), b(4)
      character*(MPI_MAX_PROCESSOR_NAME) host
      character*(MPI_MAX_ERROR_STRING) msg
      logical flag
      errs = 0
      call MPI_INIT(ierr)
      call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
      call MPI_COMM_SIZE(MPI_COMM_WORLD, size, ierr)
      t0 = MPI_WTIME()
      next = mod(rank + 1, size)
      prev = mod(rank + size - 1, size)
!     A ring with nonblocking calls; statuses of both requests.
      call MPI_IRECV(buf(1), 1, MPI_INTEGER, prev, 7, MPI_COMM_WORLD,
     &     reqs(1), ierr)
      call MPI_ISEND(rank, 1, MPI_INTEGER, next, 7, MPI_COMM_WORLD,
     &     reqs(2), ierr)
      call MPI_WAITALL(2, reqs, sts, ierr)
      if (buf(1) .ne. prev) errs = errs + 1
      if (sts(MPI_SOURCE, 1) .ne. prev) errs = errs + 1
      if (sts(MPI_TAG, 1) .ne. 7) errs = errs + 1
      if (reqs(1) .ne. MPI_REQUEST_NULL) errs = errs + 1
!     Blocking send and receive with MPI_ANY_SOURCE; Get_count.
      call MPI_SENDRECV(rank, 1, MPI_INTEGER, next, 8, val, 2,
     &     MPI_INTEGER, MPI_ANY_SOURCE, 8, MPI_COMM_WORLD, st, ierr)
      call MPI_GET_COUNT(st, MPI_INTEGER, cnt, ierr)
      if (val .ne. prev .or. cnt .ne. 1) errs = errs + 1
!     Waitany counts from 1; Iprobe finds a message before its receive.
      call MPI_ISEND(rank, 1, MPI_INTEGER, next, 9, MPI_COMM_WORLD,
     &     reqs(1), ierr)
      flag = .false.
      do while (.not. flag)
         call MPI_IPROBE(prev, 9, MPI_COMM_WORLD, flag, st, ierr)
      end do
      call MPI_RECV(val, 1, MPI_INTEGER, prev, 9, MPI_COMM_WORLD,
     &     MPI_STATUS_IGNORE, ierr)
      reqs(2) = MPI_REQUEST_NULL
      call MPI_WAITANY(2, reqs, idx, st, ierr)
      if (idx .ne. 1 .or. val .ne. prev) errs = errs + 1
!     Collectives.
      do i = 1, 4
         a(i) = rank + i
      end do
      call MPI_ALLREDUCE(a, b, 4, MPI_DOUBLE_PRECISION, MPI_SUM,
     &     MPI_COMM_WORLD, ierr)
      if (b(2) .ne. dble(size * (size - 1) / 2 + 2 * size))
     &     errs = errs + 1
      val = 0
      if (rank .eq. 0) val = 42
      call MPI_BCAST(val, 1, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
      if (val .ne. 42) errs = errs + 1
      call MPI_GATHER(rank, 1, MPI_INTEGER, gat, 1, MPI_INTEGER, 0,
     &     MPI_COMM_WORLD, ierr)
      if (rank .eq. 0) then
         do i = 1, size
            if (gat(i) .ne. i - 1) errs = errs + 1
         end do
      endif
      do i = 1, size
         one(i) = rank * 100 + i - 1
      end do
      call MPI_ALLTOALL(one, 1, MPI_INTEGER, gat, 1, MPI_INTEGER,
     &     MPI_COMM_WORLD, ierr)
      do i = 1, size
         if (gat(i) .ne. (i - 1) * 100 + rank) errs = errs + 1
      end do
      a(1) = rank
      call MPI_ALLREDUCE(MPI_IN_PLACE, a, 1, MPI_DOUBLE_PRECISION,
     &     MPI_MAX, MPI_COMM_WORLD, ierr)
      if (a(1) .ne. dble(size - 1)) errs = errs + 1
      flag = rank .eq. size - 1
      call MPI_ALLREDUCE(MPI_IN_PLACE, flag, 1, MPI_LOGICAL, MPI_LOR,
     &     MPI_COMM_WORLD, ierr)
      if (.not. flag) errs = errs + 1
!     Communicators: split in halves, dup, compare, free.
      call MPI_COMM_SPLIT(MPI_COMM_WORLD, mod(rank, 2), -rank, half,
     &     ierr)
      call MPI_COMM_RANK(half, hrank, ierr)
      call MPI_COMM_SIZE(half, hsize, ierr)
      if (hsize .ne. (size + 1 - mod(rank, 2)) / 2) errs = errs + 1
      if (hrank .ne. hsize - 1 - rank / 2) errs = errs + 1
      call MPI_COMM_DUP(MPI_COMM_WORLD, dup, ierr)
      call MPI_COMM_COMPARE(dup, MPI_COMM_WORLD, res, ierr)
      if (res .ne. MPI_CONGRUENT) errs = errs + 1
      call MPI_COMM_FREE(dup, ierr)
      if (dup .ne. MPI_COMM_NULL) errs = errs + 1
      call MPI_COMM_FREE(half, ierr)
!     Strings and errors returned as codes.
      call MPI_GET_PROCESSOR_NAME(host, len, ierr)
      if (len .le. 0 .or. host(len+1:len+1) .ne. ' ') errs = errs + 1
      call MPI_COMM_SET_ERRHANDLER(MPI_COMM_WORLD, MPI_ERRORS_RETURN,
     &     ierr)
      call MPI_SEND(rank, 1, MPI_INTEGER, size, 1, MPI_COMM_WORLD,
     &     ierr)
      call MPI_ERROR_CLASS(ierr, cls, i)
      if (cls .ne. MPI_ERR_RANK) errs = errs + 1
      call MPI_ERROR_STRING(MPI_ERR_RANK, msg, len, ierr)
      if (msg(1:12) .ne. 'MPI_ERR_RANK') errs = errs + 1
      t1 = MPI_WTIME()
      if (t1 .lt. t0 .or. MPI_WTICK() .le. 0d0) errs = errs + 1
      call MPI_ALLREDUCE(MPI_IN_PLACE, errs, 1, MPI_INTEGER, MPI_SUM,
     &     MPI_COMM_WORLD, ierr)
      if (rank .eq. 0) then
         if (errs .eq. 0) then
            write (*, '(a, i0, a)') 'basics: ok ', size, ' tasks'
         else
            write (*, '(a, i0, a)') 'basics: ', errs, ' errors'
         endif
      endif
      call MPI_FINALIZE(ierr)
      end
