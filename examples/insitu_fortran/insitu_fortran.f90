! A Fortran science code training a surrogate in-situ with kamp: a 2-D heat (diffusion) solver
! with a Gray-Scott reaction term, the part a real code would find expensive (chemistry). Every
! 2nd step the MLP trains on the solver's own arrays as they lie (state(nx, ny, 2) without its
! halo, a strided section, and the reaction rates; nothing is copied); then the solver runs 10
! steps ahead on the surrogate's rates and is compared with itself on its own rates. MPI: each
! rank owns a band of rows and its points' samples; kamp sums the gradients over the ranks.
!   insitu_fortran [loss-curve file] [checkpoint file]
program insitu_fortran
  use, intrinsic :: iso_fortran_env, only: real32, real64, output_unit
  use mpi
  use kamp
  implicit none

  integer, parameter :: nx = 32, ny = 32, steps = 1200, every = 2, ahead = 10
  real(real64), parameter :: du = 0.16d0, dv = 0.08d0, feed = 0.025d0, kill = 0.055d0, dt = 1.0d0
  ! The code keeps its reaction rates in units of 0.02, their size: the network's targets are O(1).
  real(real64), parameter :: rate_unit = 0.02d0
  character(len=*), parameter :: config = &
      'model: {type: mlp, parameters: {layer_sizes: [2, 32, 32, 2], activation: tanh}}' // new_line('a') // &
      'loss: {type: MSE}' // new_line('a') // &
      'optimizer: {type: adam, parameters: {learning_rate: 3.0e-3}}' // new_line('a') // &
      'lr_scheduler: {type: cosine_annealing, parameters: {T_max: 600, eta_min: 1.0e-5}}' // new_line('a') // &
      'precision: fp32'
  type(kamp_session) :: surrogate
  real(real64), allocatable :: state(:, :, :), rates(:, :, :), exact(:, :, :), learned(:, :, :), diffused(:, :, :)
  real(real32), allocatable :: predicted(:, :, :)
  real(real64), allocatable :: losses(:)
  real(real64) :: loss, first, last, error, change, baseline, sums(4), field
  integer :: ierr, rank, ranks, rows, row0, step, k, trained, unit
  character(len=256) :: curve_path = '', checkpoint_path = ''

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, ranks, ierr)
  if (command_argument_count() >= 1) call get_command_argument(1, curve_path)
  if (command_argument_count() >= 2) call get_command_argument(2, checkpoint_path)
  if (mod(ny, ranks) /= 0) call fail('the ranks must divide the 32 rows')
  rows = ny / ranks
  row0 = rank * rows
  allocate(state(0:nx + 1, 0:rows + 1, 2), rates(nx, rows, 2), losses(steps / every))
  call initial_state(state)

  call check(kamp_create_from_text(surrogate, config, comm=MPI_COMM_WORLD))
  trained = 0
  do step = 1, steps
    call exchange_halos(state)
    call reaction(state(1:nx, 1:rows, :), rates)
    if (mod(step, every) == 0) then
      ! The points of this rank are the batch (the first two dimensions), (u, v) the features.
      call check(kamp_train(surrogate, state(1:nx, 1:rows, :), rates, batch_dims=-2))
      call check(kamp_loss(surrogate, loss))
      trained = trained + 1
      call MPI_Allreduce(loss, losses(trained), 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
      losses(trained) = losses(trained) / ranks
    end if
    call advance(state, rates)
  end do

  ! Ten steps ahead: the solver on its own rates, on the surrogate's (fp32 outputs), and on none.
  allocate(exact, source=state)
  allocate(learned, source=state)
  allocate(diffused, source=state)
  allocate(predicted(nx, rows, 2))
  do k = 1, ahead
    call exchange_halos(exact)
    call reaction(exact(1:nx, 1:rows, :), rates)
    call advance(exact, rates)
    call exchange_halos(learned)
    call check(kamp_predict(surrogate, learned(1:nx, 1:rows, :), predicted, batch_dims=-2))
    rates = real(predicted, real64)
    call advance(learned, rates)
    call exchange_halos(diffused)
    rates = 0
    call advance(diffused, rates)
  end do
  sums = [sum((learned(1:nx, 1:rows, :) - exact(1:nx, 1:rows, :))**2), &
          sum((exact(1:nx, 1:rows, :) - state(1:nx, 1:rows, :))**2), &
          sum((diffused(1:nx, 1:rows, :) - exact(1:nx, 1:rows, :))**2), sum(exact(1:nx, 1:rows, :)**2)]
  call MPI_Allreduce(MPI_IN_PLACE, sums, 4, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  error = sqrt(sums(1) / (2 * nx * ny))
  change = sqrt(sums(2) / (2 * nx * ny))
  baseline = sqrt(sums(3) / (2 * nx * ny))
  field = sqrt(sums(4) / (2 * nx * ny))
  first = sum(losses(1:10)) / 10
  last = sum(losses(trained - 9:trained)) / 10

  if (len_trim(checkpoint_path) > 0) call check(kamp_save(surrogate, checkpoint_path))
  if (rank == 0) then
    write(output_unit, '(a, i0, a, i0, a)') 'in-situ surrogate on ', ranks, ' rank(s), ', trained, ' train steps'
    write(output_unit, '(a, es10.3, a, es10.3, a, f8.1)') '  loss: first 10 ', first, ', last 10 ', last, &
        ', fell by a factor ', first / last
    write(output_unit, '(a, i0, a, 4(es10.3, a))') '  field ', ahead, ' steps ahead: rms error ', error, &
        ' (field rms ', field, ', change ', change, ', error without the reaction ', baseline, ')'
    if (len_trim(curve_path) > 0) then
      open(newunit=unit, file=trim(curve_path), status='replace', action='write')
      write(unit, '(es24.16)') losses(1:trained)
      close(unit)
    end if
  end if
  call check(kamp_destroy(surrogate))
  ! The criteria. Seen: the loss fell 250x, the error was 0.8 % of the field and 0.13 of the
  ! error without the reaction (the surrogate's rates are as good as 600 Adam steps make them: PyTorch
  ! converges no faster on this function).
  if (first / last < 50 .or. error > 0.02d0 * field .or. error > 0.25d0 * baseline) then
    if (rank == 0) write(output_unit, '(a)') 'FAILED: the loss fell less than 50x, or the error is over 2 % of the ' // &
        'field or over 1/4 of the error without the reaction'
    call MPI_Abort(MPI_COMM_WORLD, 1, ierr)
  end if
  if (rank == 0) write(output_unit, '(a)') 'passed'
  call MPI_Finalize(ierr)

contains

  subroutine check(status)
    integer, intent(in) :: status
    if (status /= KAMP_OK) call fail(kamp_last_error())
  end subroutine check

  subroutine fail(message)
    character(len=*), intent(in) :: message
    integer :: ignored
    write(output_unit, '(a)') 'insitu_fortran: ' // message
    call MPI_Abort(MPI_COMM_WORLD, 1, ignored)
  end subroutine fail

  ! u = 1, v = 0, with three squares of u = 1/2, v = 1/4 plus a ripple: placed by global
  ! coordinates, so that every decomposition starts from the same field.
  subroutine initial_state(s)
    real(real64), intent(out) :: s(0:, 0:, :)
    integer :: i, j, c
    integer, parameter :: centres(2, 3) = reshape([8, 9, 22, 14, 13, 25], [2, 3])
    s = 0
    s(:, :, 1) = 1
    do j = 1, rows
      do i = 1, nx
        do c = 1, 3
          if (abs(i - centres(1, c)) <= 3 .and. abs(row0 + j - centres(2, c)) <= 3) then
            s(i, j, 1) = 0.5d0 + 0.02d0 * sin(0.7d0 * i + 1.3d0 * (row0 + j))
            s(i, j, 2) = 0.25d0 + 0.02d0 * cos(1.1d0 * i - 0.9d0 * (row0 + j))
          end if
        end do
      end do
    end do
  end subroutine initial_state

  ! Periodic in x here; in y through the neighbouring ranks (or this rank's own rows).
  subroutine exchange_halos(s)
    real(real64), intent(inout) :: s(0:, 0:, :)
    real(real64) :: send(0:nx + 1, 2), recv(0:nx + 1, 2)
    integer :: up, down, c
    s(0, :, :) = s(nx, :, :)
    s(nx + 1, :, :) = s(1, :, :)
    up = mod(rank + 1, ranks)
    down = mod(rank - 1 + ranks, ranks)
    do c = 1, 2
      send(:, c) = s(:, rows, c)
    end do
    call MPI_Sendrecv(send, 2 * (nx + 2), MPI_DOUBLE_PRECISION, up, 1, recv, 2 * (nx + 2), MPI_DOUBLE_PRECISION, down, &
                      1, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
    s(:, 0, :) = recv
    do c = 1, 2
      send(:, c) = s(:, 1, c)
    end do
    call MPI_Sendrecv(send, 2 * (nx + 2), MPI_DOUBLE_PRECISION, down, 2, recv, 2 * (nx + 2), MPI_DOUBLE_PRECISION, up, &
                      2, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
    s(:, rows + 1, :) = recv
  end subroutine exchange_halos

  ! The reaction term: what the surrogate learns.
  subroutine reaction(s, r)
    real(real64), intent(in) :: s(:, :, :)
    real(real64), intent(out) :: r(:, :, :)
    r(:, :, 1) = (-s(:, :, 1) * s(:, :, 2)**2 + feed * (1 - s(:, :, 1))) / rate_unit
    r(:, :, 2) = (s(:, :, 1) * s(:, :, 2)**2 - (feed + kill) * s(:, :, 2)) / rate_unit
  end subroutine reaction

  ! One explicit step of diffusion plus the given reaction rates.
  subroutine advance(s, r)
    real(real64), intent(inout) :: s(0:, 0:, :)
    real(real64), intent(in) :: r(:, :, :)
    real(real64) :: lap(nx, rows)
    integer :: c
    do c = 1, 2
      lap = s(0:nx - 1, 1:rows, c) + s(2:nx + 1, 1:rows, c) + s(1:nx, 0:rows - 1, c) + s(1:nx, 2:rows + 1, c) &
            - 4 * s(1:nx, 1:rows, c)
      s(1:nx, 1:rows, c) = s(1:nx, 1:rows, c) + dt * (merge(du, dv, c == 1) * lap + rate_unit * r(:, :, c))
    end do
  end subroutine advance

end program insitu_fortran
