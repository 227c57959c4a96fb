! `use kamp` from Fortran: arrays of every rank, kind and stride read where they lie train to the
! same bits as the plain (features, batch) array; bad input is a status and a message, and the
! session is unchanged after it.
program test_fortran
  use, intrinsic :: iso_fortran_env, only: real32, real64, int32, output_unit
  use kamp
  implicit none

  integer, parameter :: n = 8, steps = 4
  character(len=*), parameter :: config = &
      'model: {type: mlp, parameters: {layer_sizes: [3, 16, 2], activation: tanh}}' // new_line('a') // &
      'optimizer: {type: adamw, parameters: {learning_rate: 1.0e-2}}' // new_line('a') // 'seed: 7'
  type(kamp_session) :: plain, other, gone
  type(kamp_report) :: report
  real(real64) :: x(3, n), y(2, n), xt(n, 3), yt(n, 2), wide(7, n), x4(3, 1, 1, n)
  real(real32) :: x32(3, n), reference(2, n), out(2, n), before(2, n)
  complex(real64) :: z(3, n)
  integer(int32) :: ints(2, n)
  real(real64) :: scalar
  integer :: k, failures

  failures = 0
  call check(kamp_create_from_text(plain, config))
  do k = 1, steps
    call sample(k)
    call check(kamp_train(plain, x, y))
  end do
  call sample(99)
  call check(kamp_predict(plain, x, reference))

  ! The same samples in other layouts and kinds: the same bits.
  call layout('batch first, batch_dims=-1', 1)
  call layout('a strided section of a wider array', 2)
  call layout('rank 4 (3, 1, 1, batch)', 3)
  call layout('real32 inputs', 4)

  ! Bad input: a status, a message, nothing changed.
  before = reference
  call expect(kamp_train(plain, x(1:2, :), y), KAMP_ERROR_INVALID_ARGUMENT, '2 features per sample')
  call expect(kamp_train(plain, x, y(:, 1:n - 1)), KAMP_ERROR_INVALID_ARGUMENT, 'rows but labels')
  call expect(kamp_train(plain, z, y), KAMP_ERROR_INVALID_ARGUMENT, 'a type kamp does not read')
  call expect(kamp_train(plain, scalar, y), KAMP_ERROR_INVALID_ARGUMENT, 'rank 0')
  call expect(kamp_predict(plain, x, ints), KAMP_ERROR_INVALID_ARGUMENT, 'outputs are fp64')
  call expect(kamp_train(plain, x, y, batch_dims=3), KAMP_ERROR_INVALID_ARGUMENT, 'batch_dims 3')
  call expect(kamp_train(plain, x, y, device=KAMP_CUDA), KAMP_ERROR_UNSUPPORTED, 'CUDA memory')
  call expect(kamp_train(gone, x, y), KAMP_ERROR_INVALID_HANDLE, 'NULL')
  call check(kamp_create_from_text(other, config))
  gone = other
  call check(kamp_destroy(other))
  call expect(kamp_train(gone, x, y), KAMP_ERROR_INVALID_HANDLE, 'not a live session')
  call expect(kamp_destroy(gone), KAMP_ERROR_INVALID_HANDLE, 'destroyed twice')
  call check(kamp_destroy(other))  ! destroy set it to null: a no-op
  call expect(kamp_create_from_text(other, config // new_line('a') // 'learning_rat: 1'), KAMP_ERROR_CONFIG, &
              'learning_rat')
  call expect(kamp_create(other, '/nonexistent/surrogate.yaml'), KAMP_ERROR_CONFIG, '/nonexistent/surrogate.yaml')
  call expect(kamp_load(plain, '/nonexistent/surrogate.h5'), KAMP_ERROR_IO, '/nonexistent/surrogate.h5')
  call check(kamp_predict(plain, x, out))
  if (.not. same_bits(out, before)) call fail('the failures changed the session')
  call check(kamp_get_report(plain, report))
  if (report%train_steps /= steps) call fail('train_steps changed by failed calls')
  call check(kamp_destroy(plain))

  if (failures > 0) then
    write(output_unit, '(i0, a)') failures, ' failure(s)'
    stop 1
  end if
  write(output_unit, '(a)') 'use kamp: every layout trains to the same bits; bad input is refused by name'

contains

  ! Step k's samples in every layout the test uses.
  subroutine sample(k)
    integer, intent(in) :: k
    integer :: i, j
    do i = 1, n
      do j = 1, 3
        x(j, i) = real(mod(i * 7 + j * 3 + k * 5, 17) - 8, real64) / 8
      end do
      do j = 1, 2
        y(j, i) = real(mod(i * 5 + j + k, 9) - 4, real64) / 4
      end do
    end do
    xt = transpose(x)
    yt = transpose(y)
    wide = -1.0d30  ! what the section skips must never be read
    wide(1:5:2, :) = x
    x4(:, 1, 1, :) = x
    x32 = real(x, real32)
  end subroutine sample

  subroutine layout(what, kind)
    character(len=*), intent(in) :: what
    integer, intent(in) :: kind
    type(kamp_session) :: s
    integer :: k
    call check(kamp_create_from_text(s, config))
    do k = 1, steps
      call sample(k)
      select case (kind)
      case (1)
        call check(kamp_train(s, xt, yt, batch_dims=-1))
      case (2)
        call check(kamp_train(s, wide(1:5:2, :), y))
      case (3)
        call check(kamp_train(s, x4, y))
      case default
        call check(kamp_train(s, x32, y))
      end select
    end do
    call sample(99)
    call check(kamp_predict(s, x, out))
    if (.not. same_bits(out, reference)) &
        call fail(what // ': predictions differ from the plain array''s')
    call check(kamp_destroy(s))
  end subroutine layout

  subroutine expect(status, wanted, words)
    integer, intent(in) :: status, wanted
    character(len=*), intent(in) :: words
    character(len=:), allocatable :: message
    message = kamp_last_error()
    if (status /= wanted) then
      call fail('expected status ' // digits(wanted) // ', got ' // digits(status) // ': ' // message)
    else if (index(message, words) == 0) then
      call fail('the message "' // message // '" does not say "' // words // '"')
    end if
  end subroutine expect

  subroutine check(status)
    integer, intent(in) :: status
    if (status /= KAMP_OK) then
      write(output_unit, '(a)') 'kamp: ' // kamp_last_error()
      stop 1
    end if
  end subroutine check

  subroutine fail(message)
    character(len=*), intent(in) :: message
    write(output_unit, '(a)') 'FAIL: ' // message
    failures = failures + 1
  end subroutine fail

  logical function same_bits(a, b)
    real(real32), intent(in) :: a(:, :), b(:, :)
    same_bits = all(transfer(a, [0_int32], size(a)) == transfer(b, [0_int32], size(b)))
  end function same_bits

  function digits(i) result(text)
    integer, intent(in) :: i
    character(len=12) :: text
    write(text, '(i0)') i
  end function digits

end program test_fortran
